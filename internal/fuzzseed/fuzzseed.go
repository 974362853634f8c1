// Package fuzzseed writes and reads the seed files of Go's fuzzing engine
// (testdata/fuzz/<FuzzTarget>/<name>, "go test fuzz v1"), so the tests that
// regenerate a package's seeds from real records (uvm's from the decoders'
// own, devrt's from ring images) share one encoder of the format.
package fuzzseed

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const header = "go test fuzz v1"

// Encode returns the seed file holding values, in the order of the fuzz
// function's parameters. Values are the types the engine takes: []byte,
// string, bool, the sized and unsized ints and uints, float32 and float64.
func Encode(values ...any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header + "\n")
	for i, v := range values {
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			fmt.Fprintf(&b, "%T(%v)\n", v, v)
		case float32:
			fmt.Fprintf(&b, "float32(%s)\n", strconv.FormatFloat(float64(v), 'g', -1, 32))
		case float64:
			fmt.Fprintf(&b, "float64(%s)\n", strconv.FormatFloat(v, 'g', -1, 64))
		default:
			return nil, fmt.Errorf("fuzzseed: value %d: type %T is not a fuzz argument", i, v)
		}
	}
	return b.Bytes(), nil
}

// Write writes values as the seed name of target under dir/testdata/fuzz
// (dir "" for the package's own directory), making the directory.
func Write(dir, target, name string, values ...any) error {
	body, err := Encode(values...)
	if err != nil {
		return err
	}
	d := filepath.Join(dir, "testdata", "fuzz", target)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, strings.ReplaceAll(name, " ", "_")), body, 0o644)
}

// ReadBytes returns the value of a seed file of one []byte argument.
func ReadBytes(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeBytes(raw)
}

// DecodeBytes returns the value of a seed of one []byte argument.
func DecodeBytes(raw []byte) ([]byte, error) {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, len(raw)+1)
	var lines []string
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || lines[0] != header {
		return nil, errors.New("fuzzseed: not a seed of one value")
	}
	q, pre := strings.CutPrefix(lines[1], "[]byte(")
	q, suf := strings.CutSuffix(q, ")")
	if !pre || !suf {
		return nil, fmt.Errorf("fuzzseed: %.40q is not a []byte value", lines[1])
	}
	s, err := strconv.Unquote(q)
	if err != nil {
		return nil, fmt.Errorf("fuzzseed: %.40q: %w", lines[1], err)
	}
	return []byte(s), nil
}
