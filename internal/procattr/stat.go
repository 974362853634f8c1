package procattr

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// statStartTimeField is the number of the starttime field in
// /proc/<pid>/stat, counting from 1 as proc_pid_stat(5) does.
const statStartTimeField = 22

// parseStat extracts comm (field 2) and starttime (field 22) from the
// contents of /proc/<pid>/stat.
//
// comm is printed between parentheses without any escaping and may itself
// contain spaces and parentheses ("(sd-pam)", "python3 (worker)"), so it runs
// from the first '(' to the last ')'. The fields after it are plain numbers
// and single state letters separated by single spaces.
func parseStat(data []byte) (comm string, startTime uint64, err error) {
	open := bytes.IndexByte(data, '(')
	closing := bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return "", 0, errors.New("stat: no parenthesised comm field")
	}
	comm = string(data[open+1 : closing])

	// The field right after comm is field 3 (state).
	rest := data[closing+1:]
	for field := 3; ; field++ {
		rest = bytes.TrimLeft(rest, " ")
		if len(rest) == 0 || rest[0] == '\n' {
			return "", 0, fmt.Errorf("stat: %d fields, want at least %d", field-1, statStartTimeField)
		}
		end := bytes.IndexAny(rest, " \n")
		if end < 0 {
			end = len(rest)
		}
		if field == statStartTimeField {
			startTime, err = strconv.ParseUint(string(rest[:end]), 10, 64)
			if err != nil {
				return "", 0, fmt.Errorf("stat: starttime %s is not an unsigned number", quote(rest[:end]))
			}
			return comm, startTime, nil
		}
		rest = rest[end:]
	}
}

// statState returns the state letter (field 3) of /proc/<pid>/stat contents.
func statState(data []byte) (byte, error) {
	closing := bytes.LastIndexByte(data, ')')
	if closing < 0 || closing+2 >= len(data) || data[closing+1] != ' ' {
		return 0, errors.New("stat: no state field after comm")
	}
	return data[closing+2], nil
}
