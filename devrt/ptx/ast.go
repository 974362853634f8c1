package ptx

// Module is one PTX translation unit (or a fragment: no header).
type Module struct {
	Version     string   // `.version 9.0` → "9.0"; "" in a fragment
	Target      []string // `.target sm_90, debug` → ["sm_90", "debug"]
	AddressSize int      // 32 or 64; 0 when absent
	Items       []Item   // module-level items in source order
}

// Item is a module-level item: *Function, *Var, *File, *Section, *Pragma or *Alias.
type Item interface{ itemNode() }

// Stmt is a statement of a function body: *Instruction, *Label, *RegDecl,
// *Var, *Block, *Loc, *Pragma, *CallPrototype or *Targets.
type Stmt interface{ stmtNode() }

// Function is an `.entry` (kernel) or a `.func`, with or without a body.
type Function struct {
	Pos      Pos
	Linkage  string // "", ".extern", ".visible", ".weak", ".common"
	Entry    bool   // .entry (kernel) rather than .func
	Attrs    []Expr // `.attribute(...)` arguments of a .func, in order
	Returns  []*Var // return parameters of a .func (nil: none); ReturnsParen marks `()` written
	Name     string
	Params   []*Var
	NoParams bool             // no parameter list at all (a .func without "(...)")
	Perf     []*PerfDirective // performance directives and .noreturn, between the header and body
	Body     *Block           // nil for a declaration (prototype ending in ';')
	// ReturnsParen records an explicit empty return list `()`.
	ReturnsParen bool
}

// PerfDirective is a directive between a function header and its body:
// .maxntid 256, 1, 1 / .reqntid 128 / .minnctapersm 2 / .maxnreg 64 /
// .explicitcluster / .noreturn / .pragma "..." ...
type PerfDirective struct {
	Pos  Pos
	Name string   // with the dot: ".maxntid"
	Args []string // integer arguments as written, or the string of a .pragma
}

// Var declares a variable or parameter in a state space: module globals,
// `.local`/`.shared`/`.param` inside bodies, and function parameters.
type Var struct {
	Pos      Pos
	Linkage  string // "", ".extern", ".visible", ".weak", ".common"
	Space    string // ".global", ".const", ".shared", ".local", ".param", ".reg", ".tex", ...
	Attrs    []Expr // `.attribute(.managed)` arguments
	Align    string // value of a leading `.align N`; "" when absent
	Vector   string // ".v2", ".v4", ".v8" or ""
	Type     string // ".b8", ".u32", ".f64", ".pred", ...
	Ptr      bool   // `.ptr` parameter attribute (kernel parameters)
	PtrSpace string // state space after .ptr: ".global" ...
	PtrAlign string // `.align N` after .ptr
	Name     string
	Dims     []string // array dimensions as written; "" for `[]`
	Init     Expr     // initializer after '=' or nil
}

// RegDecl declares registers: `.reg .b32 %r<25>;` or `.reg .f16 low, high;`.
type RegDecl struct {
	Pos    Pos
	Vector string // ".v2"/".v4" or ""
	Type   string
	Names  []RegName
}

// RegName is one declared name; Count > 0 for a parameterized declaration
// `%r<25>` which declares %r0 .. %r24.
type RegName struct {
	Name  string
	Count int
}

// Block is a `{ ... }` scope (a function body or a nested scope).
type Block struct {
	Pos   Pos
	Stmts []Stmt
}

// Label is `name:`; it labels the statement that follows.
type Label struct {
	Pos  Pos
	Name string
}

// Guard is an instruction's predicate `@%p` or `@!%p`.
type Guard struct {
	Neg bool
	Reg string
}

// Instruction is a (possibly guarded) instruction: opcode, dotted
// modifiers and operands.
type Instruction struct {
	Pos       Pos
	Guard     *Guard
	Opcode    string   // "ld"
	Modifiers []string // [".global", ".v4", ".b32"]
	Operands  []Expr
}

// Loc is a `.loc file line column [, function_name sym, inlined_at f l c]` directive.
type Loc struct {
	Pos  Pos
	Args []Expr // file, line, column
	// Extra holds the optional attributes after the column, each a
	// name followed by its values: function_name $L__info_string0 / inlined_at 1 17 2.
	Extra []LocAttr
}

// LocAttr is one attribute of a .loc directive.
type LocAttr struct {
	Name   string
	Values []Expr
}

// Pragma is `.pragma "string"[, "string"...];`.
type Pragma struct {
	Pos     Pos
	Strings []string // quoted, as written
}

// CallPrototype is `.callprototype (ret) _ (params);` (normally labelled).
type CallPrototype struct {
	Pos          Pos
	Returns      []*Var
	ReturnsParen bool
	Params       []*Var
	NoReturn     bool
}

// Targets is `.branchtargets L1, L2, ...;` or `.calltargets f1, f2, ...;`
// (labelled; the label names the list for brx.idx or an indirect call).
type Targets struct {
	Pos       Pos
	Directive string // ".branchtargets" or ".calltargets"
	Names     []string
}

// File is `.file N "name" [, timestamp, size]`.
type File struct {
	Pos   Pos
	Index string
	Name  string // quoted, as written
	Extra []string
}

// Section is a `.section name { ... }` debug section.
type Section struct {
	Pos   Pos
	Name  string
	Lines []SectionLine
}

// SectionLine is a label or a data directive inside a section.
type SectionLine struct {
	Label  string // non-empty for `name:`
	Type   string // ".b8", ".b16", ".b32", ".b64" for data
	Values []Expr
}

// Alias is `.alias a, b;`.
type Alias struct {
	Pos           Pos
	Name, Aliasee string
}

func (*Function) itemNode() {}
func (*Var) itemNode()      {}
func (*File) itemNode()     {}
func (*Section) itemNode()  {}
func (*Pragma) itemNode()   {}
func (*Alias) itemNode()    {}

func (*Instruction) stmtNode()   {}
func (*Label) stmtNode()         {}
func (*RegDecl) stmtNode()       {}
func (*Var) stmtNode()           {}
func (*Block) stmtNode()         {}
func (*Loc) stmtNode()           {}
func (*Pragma) stmtNode()        {}
func (*CallPrototype) stmtNode() {}
func (*Targets) stmtNode()       {}

// Expr is an operand or initializer expression.
type Expr interface{ exprNode() }

// Operand and initializer expressions.
type (
	// Name is an identifier, register (%r1, %tid.x), label, symbol, `_`,
	// or a dot-name used as a symbol in sections (.debug_abbrev).
	Name struct{ Text string }
	// IntLit and FloatLit keep the literal as written.
	IntLit   struct{ Text string }
	FloatLit struct{ Text string }
	// StrLit is a quoted string as written.
	StrLit struct{ Text string }
	// Unary is -x, !x, ~x.
	Unary struct {
		Op string
		X  Expr
	}
	// Binary is x op y for + - * / % & | ^ << >>; `%r1|%p2` (shfl's two
	// destinations) is a Binary with Op "|".
	Binary struct {
		Op   string
		X, Y Expr
	}
	// Address is a memory operand `[x]` (`[tex, {a, b}]` has two elements).
	Address struct{ Elems []Expr }
	// Vector is a brace list `{a, b}` (vector operand or array initializer).
	Vector struct{ Elems []Expr }
	// Paren is a parenthesized list `(a, b)`: call arguments and returns.
	Paren struct{ Elems []Expr }
	// Call is fn(args) in initializers: generic(sym), mask(...).
	Call struct {
		Fn   string
		Args []Expr
	}
)

func (*Name) exprNode()     {}
func (*IntLit) exprNode()   {}
func (*FloatLit) exprNode() {}
func (*StrLit) exprNode()   {}
func (*Unary) exprNode()    {}
func (*Binary) exprNode()   {}
func (*Address) exprNode()  {}
func (*Vector) exprNode()   {}
func (*Paren) exprNode()    {}
func (*Call) exprNode()     {}
