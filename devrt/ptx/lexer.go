package ptx

import (
	"fmt"
	"strings"
)

// Kind is the class of a token.
type Kind uint8

// Token kinds. Comments are kept by the lexer (Lex drops them unless asked)
// so that tools can show them; the parser never sees them.
const (
	EOF       Kind = iota
	Ident          // identifier: opcodes, symbols, labels, `_`, `$L__BB0_1`
	Reg            // %-prefixed name, with an adjacent .x/.y/... component: `%r1`, `%ctaid.x`
	Directive      // dot-name: `.version`, `.global`, `.f32`, `.shared::cta`, `.debug_info`
	Int            // integer literal: 12, 0x1F, 017, 0b101, 4U
	Float          // float literal: 0f3F800000, 0d3FF0000000000000, 1.5, 9.0
	String         // "quoted"
	Punct          // one of , ; : ( ) [ ] { } < > + - * / % ! ~ & | ^ @ = ?
	Comment        // // or /* */
)

var kindNames = [...]string{"EOF", "identifier", "register", "directive", "integer", "float", "string", "punctuation", "comment"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Pos is a 1-based line and column in the source.
type Pos struct {
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Token is one lexical token; Text is exactly as in the source.
type Token struct {
	Kind Kind
	Text string
	Pos  Pos
}

func (t Token) String() string {
	if t.Kind == EOF {
		return "end of input"
	}
	return fmt.Sprintf("%s %q", t.Kind, t.Text)
}

// Error is a syntax error at a position in the source.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("ptx:%s: %s", e.Pos, e.Msg) }

// Lex splits src into tokens, without comments, ending with an EOF token.
func Lex(src string) ([]Token, error) { return lex(src, false) }

// LexWithComments is Lex keeping Comment tokens.
func LexWithComments(src string) ([]Token, error) { return lex(src, true) }

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isHex(c byte) bool    { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// isIdentCont reports characters that may follow the first of an identifier
// (PTX: [a-zA-Z0-9_$]).
func isIdentCont(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' || c == '$' }

const punctChars = ",;:()[]{}<>+-*/%!~&|^@=?"

type lexer struct {
	src       string
	off       int
	line, col int
	toks      []Token
}

func lex(src string, comments bool) ([]Token, error) {
	l := &lexer{src: src, line: 1, col: 1}
	for {
		l.skipSpace()
		if l.off >= len(l.src) {
			l.toks = append(l.toks, Token{Kind: EOF, Pos: l.pos()})
			return l.toks, nil
		}
		start, pos := l.off, l.pos()
		kind, err := l.next()
		if err != nil {
			return nil, &Error{Pos: pos, Msg: err.Error()}
		}
		if kind == Comment && !comments {
			continue
		}
		l.toks = append(l.toks, Token{Kind: kind, Text: l.src[start:l.off], Pos: pos})
	}
}

func (l *lexer) pos() Pos { return Pos{l.line, l.col} }

func (l *lexer) advance(n int) {
	for i := 0; i < n && l.off < len(l.src); i++ {
		if l.src[l.off] == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
		l.off++
	}
}

func (l *lexer) peekAt(i int) byte {
	if l.off+i < len(l.src) {
		return l.src[l.off+i]
	}
	return 0
}

func (l *lexer) skipSpace() {
	for l.off < len(l.src) {
		switch l.src[l.off] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			l.advance(1)
		default:
			return
		}
	}
}

func (l *lexer) identTail() {
	for l.off < len(l.src) && isIdentCont(l.src[l.off]) {
		l.advance(1)
	}
}

// next scans one token starting at l.off (not whitespace).
func (l *lexer) next() (Kind, error) {
	c := l.src[l.off]
	switch {
	case c == '/' && l.peekAt(1) == '/':
		for l.off < len(l.src) && l.src[l.off] != '\n' {
			l.advance(1)
		}
		return Comment, nil
	case c == '/' && l.peekAt(1) == '*':
		end := strings.Index(l.src[l.off+2:], "*/")
		if end < 0 {
			return 0, fmt.Errorf("unterminated /* comment")
		}
		l.advance(end + 4)
		return Comment, nil
	case c == '"':
		l.advance(1)
		for {
			if l.off >= len(l.src) || l.src[l.off] == '\n' {
				return 0, fmt.Errorf("unterminated string")
			}
			switch l.src[l.off] {
			case '\\':
				l.advance(2)
				continue
			case '"':
				l.advance(1)
				return String, nil
			}
			l.advance(1)
		}
	case c == '%':
		if !isLetter(l.peekAt(1)) && l.peekAt(1) != '_' && l.peekAt(1) != '$' {
			l.advance(1)
			return Punct, nil // modulo operator
		}
		l.advance(1)
		l.identTail()
		// A component of a special or vector register: %tid.x, %v1.w
		if l.peekAt(0) == '.' && isLetter(l.peekAt(1)) && !isIdentCont(l.peekAt(2)) {
			l.advance(2)
		}
		return Reg, nil
	case c == '.':
		n := l.peekAt(1)
		if isDigit(n) {
			// .1d/.2d/.3d modifiers (tex, suld) versus a float like .5
			j := 1
			for isDigit(l.peekAt(j)) {
				j++
			}
			if !isLetter(l.peekAt(j)) && l.peekAt(j) != '_' {
				return l.number()
			}
		} else if !isLetter(n) && n != '_' && n != '$' {
			return 0, fmt.Errorf("unexpected %q", c)
		}
		l.advance(1)
		l.identTail()
		// .shared::cta, .mbarrier::complete_tx::bytes, .L2::128B
		for l.peekAt(0) == ':' && l.peekAt(1) == ':' && isIdentCont(l.peekAt(2)) { // .L2::256B too
			l.advance(2)
			l.identTail()
		}
		return Directive, nil
	case isLetter(c) || c == '_' || c == '$':
		l.advance(1)
		l.identTail()
		return Ident, nil
	case isDigit(c):
		return l.number()
	case strings.IndexByte(punctChars, c) >= 0:
		l.advance(1)
		return Punct, nil
	}
	if c < 0x20 || c >= 0x7f {
		return 0, fmt.Errorf("unexpected byte 0x%02x", c)
	}
	return 0, fmt.Errorf("unexpected %q", c)
}

// number scans an integer or float literal.
func (l *lexer) number() (Kind, error) {
	c, n := l.peekAt(0), l.peekAt(1)
	if c == '0' {
		switch n {
		case 'x', 'X':
			return l.digits(2, isHex, true, "hexadecimal")
		case 'b', 'B':
			return l.digits(2, func(c byte) bool { return c == '0' || c == '1' }, true, "binary")
		case 'f', 'F':
			return l.hexFloat(8)
		case 'd', 'D':
			return l.hexFloat(16)
		}
	}
	kind := Int
	for isDigit(l.peekAt(0)) {
		l.advance(1)
	}
	if l.peekAt(0) == '.' && !isLetter(l.peekAt(1)) {
		kind = Float
		l.advance(1)
		for isDigit(l.peekAt(0)) {
			l.advance(1)
		}
	}
	if e := l.peekAt(0); e == 'e' || e == 'E' {
		i := 1
		if s := l.peekAt(1); s == '+' || s == '-' {
			i = 2
		}
		if isDigit(l.peekAt(i)) {
			kind = Float
			l.advance(i)
			for isDigit(l.peekAt(0)) {
				l.advance(1)
			}
		}
	}
	if kind == Int && l.peekAt(0) == 'U' {
		l.advance(1)
	}
	if isIdentCont(l.peekAt(0)) {
		return 0, fmt.Errorf("malformed number")
	}
	return kind, nil
}

func (l *lexer) digits(prefix int, ok func(byte) bool, unsigned bool, what string) (Kind, error) {
	l.advance(prefix)
	if !ok(l.peekAt(0)) {
		return 0, fmt.Errorf("malformed %s literal", what)
	}
	for ok(l.peekAt(0)) {
		l.advance(1)
	}
	if unsigned && l.peekAt(0) == 'U' {
		l.advance(1)
	}
	if isIdentCont(l.peekAt(0)) {
		return 0, fmt.Errorf("malformed %s literal", what)
	}
	return Int, nil
}

// hexFloat scans 0fXXXXXXXX (n=8) or 0dXXXXXXXXXXXXXXXX (n=16).
func (l *lexer) hexFloat(n int) (Kind, error) {
	l.advance(2)
	for i := 0; i < n; i++ {
		if !isHex(l.peekAt(0)) {
			return 0, fmt.Errorf("float literal needs %d hex digits", n)
		}
		l.advance(1)
	}
	if isIdentCont(l.peekAt(0)) {
		return 0, fmt.Errorf("float literal needs %d hex digits", n)
	}
	return Float, nil
}
