package ptx

import (
	"fmt"
	"reflect"
)

// Equal reports whether two syntax trees (modules, items, statements or
// expressions) are the same, ignoring source positions.
func Equal(a, b any) bool { return eqValue(reflect.ValueOf(a), reflect.ValueOf(b)) }

var posType = reflect.TypeOf(Pos{})

func eqValue(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	if a.Type() == posType {
		return true
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return eqValue(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !eqValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		for i := 0; i < a.Len(); i++ {
			if !eqValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if !eqValue(a.MapIndex(k), b.MapIndex(k)) {
				return false
			}
		}
		return true
	default:
		return a.Interface() == b.Interface()
	}
}

// CompareTokens lexes a and b (comments dropped) and reports the first
// token where they differ, or nil when their token streams are equal: the
// round-trip criterion for Write.
func CompareTokens(a, b string) error {
	ta, err := Lex(a)
	if err != nil {
		return fmt.Errorf("first text: %w", err)
	}
	tb, err := Lex(b)
	if err != nil {
		return fmt.Errorf("second text: %w", err)
	}
	for i := 0; i < len(ta) && i < len(tb); i++ {
		x, y := ta[i], tb[i]
		if x.Kind != y.Kind || x.Text != y.Text {
			return fmt.Errorf("token %d differs: %s at %s versus %s at %s", i, x, x.Pos, y, y.Pos)
		}
	}
	if len(ta) != len(tb) {
		return fmt.Errorf("token counts differ: %d versus %d", len(ta), len(tb))
	}
	return nil
}

// RoundTrip parses src, writes it and checks the two promises of Write: the
// output parses to an equal Module and has src's token stream. It returns
// the written text.
func RoundTrip(src string, fragment bool) (string, error) {
	m, err := parse(src, fragment)
	if err != nil {
		return "", err
	}
	out := Write(m)
	m2, err := parse(out, fragment)
	if err != nil {
		return out, fmt.Errorf("written PTX does not parse: %w", err)
	}
	if !Equal(m, m2) {
		return out, fmt.Errorf("written PTX parses to a different syntax tree")
	}
	if err := CompareTokens(src, out); err != nil {
		return out, fmt.Errorf("written PTX has other tokens: %w", err)
	}
	return out, nil
}
