package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// workflowPath is the import path of the package whose Context marks workflow code.
const workflowPath = "github.com/cairn-go/cairn/workflow"

// durablePath is the import path of the package whose *Context marks durable code.
const durablePath = "github.com/cairn-go/cairn/durable"

// directive is the comment prefix that accepts a finding.
const directive = "//cairnvet:ignore"

// Analyzer reports nondeterministic operations and I/O in cairn workflow code and
// durable code.
var Analyzer = &analysis.Analyzer{
	Name: "cairnvet",
	Doc: `report nondeterminism and I/O in cairn workflow code and durable code

Workflow code (functions taking a workflow.Context, such as the Run method of a
workflow.Workflow, and the same-package functions they call) is replayed from the
run's event log, and durable code (functions taking a *durable.Context, such as a
durable.Func, and the same-package functions they call) is re-run from the top on
every Lambda invocation, so neither may read the clock, draw random numbers, start
goroutines, use channels or select, range over maps, print with fmt.Print* or the
std log package, or do I/O outside a step.`,
	URL: "https://pkg.go.dev/github.com/cairn-go/cairn/cmd/cairnvet",
	Run: run,
}

func run(pass *analysis.Pass) (any, error) {
	if path := pass.Pkg.Path(); path == workflowPath || path == durablePath || !importsRoots(pass.Pkg) {
		return nil, nil
	}
	c := &checker{
		pass:     pass,
		decls:    map[*types.Func]*ast.FuncDecl{},
		steps:    map[*ast.FuncLit]bool{},
		rootLits: map[*ast.FuncLit]bool{},
		visited:  map[visit]bool{},
		ignored:  map[token.Position]bool{},
		skipOps:  map[ast.Node]bool{},
	}
	c.index()
	c.check()
	return nil, nil
}

// importsRoots reports whether pkg imports a package whose Context marks the code
// cairnvet checks: only then can it hold any.
func importsRoots(pkg *types.Package) bool {
	for _, imp := range pkg.Imports() {
		if imp.Path() == workflowPath || imp.Path() == durablePath {
			return true
		}
	}
	return false
}

// A dialect is one kind of code cairnvet checks, workflow code or durable code,
// with the replacements its findings name.
type dialect struct {
	// code names the kind of code in findings: "workflow code".
	code string
	// The reasons that follow "<function> in <code> " in a finding on the clock, a
	// sleep, a timer, math/rand, crypto/rand and I/O.
	clock, sleep, timer, random, crypto, io string
	// print follows "<function> in <code> " in a finding on fmt.Print* and the
	// std log package, whose output repeats on every replay.
	print string
	// The findings on go and select statements, channel sends and receives, and
	// ranges over a channel.
	goStmt, selectStmt, send, recv, rangeChan string
	// stepShape reports whether a function literal of this signature is a step
	// wherever it is written (a step factory, a table of steps).
	stepShape func(*types.Signature) bool
}

// workflowCode is the code of a workflow: functions taking a workflow.Context.
var workflowCode = &dialect{
	code:       "workflow code",
	clock:      "returns a different time on each replay: use workflow.Now",
	sleep:      "blocks the delivery and does not survive a restart: use workflow.Sleep",
	timer:      "is not durable: use workflow.Sleep, or workflow.NewTimer with workflow.Select",
	random:     "returns different values on each replay: use workflow.Random",
	crypto:     "returns different values on each replay: use workflow.Random, or make the value in a step (workflow.Step)",
	io:         "is I/O that replay repeats and the run's history does not record: do I/O in a step (workflow.Step)",
	print:      "prints again on every replay: log with slog through workflow.NewLogHandler, which drops records while the workflow replays",
	goStmt:     "go statement in workflow code: start parallel steps with workflow.Go",
	selectStmt: "select statement in workflow code: wait for the first of several futures with workflow.Select",
	send:       "channel send in workflow code: pass results through steps (workflow.Go and Future.Get) or workflow.Select",
	recv:       "channel receive in workflow code: wait for steps with Future.Get (workflow.Go) or workflow.Select",
	rangeChan:  "range over a channel in workflow code: wait for steps with Future.Get (workflow.Go) or workflow.Select",
	stepShape:  isStepSig,
}

// durableCode is the code of a Lambda durable function: functions taking a
// *durable.Context. Package durable has no replay-safe clock or random source, so
// those findings send the value to a durable.Step, whose result is checkpointed.
var durableCode = &dialect{
	code:       "durable code",
	clock:      "returns a different time on each replay: do it in a durable.Step",
	sleep:      "blocks the invocation and does not survive a suspension: use dc.Wait",
	timer:      "is not durable: use dc.Wait",
	random:     "returns different values on each replay: do it in a durable.Step",
	crypto:     "returns different values on each replay: do it in a durable.Step",
	io:         "is I/O that replay repeats and no checkpoint records: do I/O in a durable.Step",
	print:      "prints again on every replay: log with dc.Logger(), which drops records while the function replays",
	goStmt:     "go statement in durable code: run branches concurrently with durable.Parallel or durable.Map",
	selectStmt: "select statement in durable code: race branches with durable.Parallel and BatchOptions.MinSuccessful",
	send:       "channel send in durable code: return results from durable.Parallel or durable.Map branches",
	recv:       "channel receive in durable code: collect results with durable.Parallel or durable.Map, or wait for an answer with durable.WaitForCallback",
	rangeChan:  "range over a channel in durable code: collect results with durable.Parallel or durable.Map, or wait for an answer with durable.WaitForCallback",
	stepShape:  isDurableStepSig,
}

// rootDialect returns the dialect of a function with signature sig, nil when it is
// neither workflow code nor durable code by its parameters.
func rootDialect(sig *types.Signature) *dialect {
	switch {
	case isWorkflowSig(sig):
		return workflowCode
	case isDurableSig(sig):
		return durableCode
	}
	return nil
}

// A root is a function whose parameters make it workflow or durable code.
type root struct {
	node ast.Node // *ast.FuncDecl or *ast.FuncLit
	d    *dialect
}

// A visit is a declaration checked as one dialect's code: a helper that both
// workflow and durable code call is checked as each.
type visit struct {
	decl *ast.FuncDecl
	d    *dialect
}

type checker struct {
	pass *analysis.Pass
	// decls maps the package's functions and methods to their declarations, the
	// nodes of the call graph.
	decls map[*types.Func]*ast.FuncDecl
	// steps holds the function literals passed to workflow or durable operations as
	// steps.
	steps map[*ast.FuncLit]bool
	// roots are the declarations and literals whose first parameter is a
	// workflow.Context or any of whose parameters is a *durable.Context, in source
	// order; rootLits marks the literals among them.
	roots    []root
	rootLits map[*ast.FuncLit]bool
	visited  map[visit]bool
	// ignored holds the file and line of every finding a directive accepts.
	ignored map[token.Position]bool
	// skipOps holds the channel operations of select cases, reported with their
	// select statement.
	skipOps map[ast.Node]bool
}

// index finds the declarations, step arguments, roots and directives of the package.
func (c *checker) index() {
	info := c.pass.TypesInfo
	for _, f := range c.pass.Files {
		c.indexDirectives(f)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if fn, ok := info.Defs[n.Name].(*types.Func); ok && n.Body != nil {
					c.decls[fn] = n
					if d := rootDialect(fn.Signature()); d != nil {
						c.roots = append(c.roots, root{n, d})
					}
				}
			case *ast.FuncLit:
				if sig, ok := info.TypeOf(n).(*types.Signature); ok {
					if d := rootDialect(sig); d != nil {
						c.roots = append(c.roots, root{n, d})
						c.rootLits[n] = true
					}
				}
			case *ast.CallExpr:
				c.indexSteps(n)
			}
			return true
		})
	}
}

// indexSteps marks the function literals passed to a workflow or durable operation
// for a parameter of type func(context.Context, ...): the runtime runs them as
// steps (workflow.Step and workflow.Go; durable.Step and durable.StepWith, the
// submit function of durable.WaitForCallback and durable.WaitForCallbackWith, the
// check function of durable.WaitForCondition), never as replayed code. A literal
// that takes a *durable.Context as well (the fn of durable.RunInChildContext, a
// durable.Map function) is marked too, but it is a root, checked on its own.
func (c *checker) indexSteps(call *ast.CallExpr) {
	fn, ok := typeutil.Callee(c.pass.TypesInfo, call).(*types.Func)
	if !ok || fn.Pkg() == nil || (fn.Pkg().Path() != workflowPath && fn.Pkg().Path() != durablePath) {
		return
	}
	ft := c.pass.TypesInfo.TypeOf(call.Fun)
	if ft == nil {
		return
	}
	sig, ok := ft.Underlying().(*types.Signature)
	if !ok {
		return
	}
	params := sig.Params()
	for i, arg := range call.Args {
		var t types.Type
		switch {
		case i < params.Len()-1 || (i == params.Len()-1 && !sig.Variadic()):
			t = params.At(i).Type()
		case sig.Variadic() && params.Len() > 0:
			t = params.At(params.Len() - 1).Type()
			if s, ok := t.(*types.Slice); ok && !call.Ellipsis.IsValid() {
				t = s.Elem()
			}
		}
		lit, ok := ast.Unparen(arg).(*ast.FuncLit)
		if !ok {
			// A named function or method value is not called here, and any other
			// expression (a step factory's call) is evaluated in workflow code.
			continue
		}
		if fsig, ok := types.Unalias(t).(*types.Signature); ok && fsig.Params().Len() > 0 && isNamed(fsig.Params().At(0).Type(), "context", "Context") {
			c.steps[lit] = true
		}
	}
}

// indexDirectives records the lines that ignore directives accept: the directive's
// own line when it trails code, the next line when it stands alone.
func (c *checker) indexDirectives(f *ast.File) {
	fset := c.pass.Fset
	var src []byte
	if c.pass.ReadFile != nil {
		src, _ = c.pass.ReadFile(fset.File(f.FileStart).Name())
	}
	for _, group := range f.Comments {
		for _, cm := range group.List {
			reason, ok := directiveReason(cm.Text)
			if !ok {
				continue
			}
			if reason == "" {
				c.pass.Reportf(cm.Pos(), "%s needs a reason: %s <why this is deterministic>", directive, directive)
				continue
			}
			pos := fset.Position(cm.Pos())
			line := pos
			line.Column, line.Offset = 0, 0
			if standalone(src, pos) {
				line.Line++
			}
			c.ignored[line] = true
		}
	}
}

// directiveReason reports whether text is an ignore directive and returns its reason.
func directiveReason(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, directive)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// standalone reports whether only blanks precede the comment at pos on its line.
// Without the source it treats the comment as standing alone.
func standalone(src []byte, pos token.Position) bool {
	if src == nil || pos.Offset > len(src) {
		return true
	}
	start := bytes.LastIndexByte(src[:pos.Offset], '\n') + 1
	return len(bytes.TrimSpace(src[start:pos.Offset])) == 0
}

// hasDirective reports whether a doc comment holds an ignore directive with a reason.
func hasDirective(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for _, cm := range doc.List {
		if reason, ok := directiveReason(cm.Text); ok && reason != "" {
			return true
		}
	}
	return false
}

// isWorkflowSig reports whether a function's first parameter is a workflow.Context.
func isWorkflowSig(sig *types.Signature) bool {
	return sig.Params().Len() > 0 && isNamed(sig.Params().At(0).Type(), workflowPath, "Context")
}

// isDurableSig reports whether any of a function's parameters is a *durable.Context.
func isDurableSig(sig *types.Signature) bool {
	for v := range sig.Params().Variables() {
		if p, ok := types.Unalias(v.Type()).(*types.Pointer); ok && isNamed(p.Elem(), durablePath, "Context") {
			return true
		}
	}
	return false
}

// isStepSig reports whether a function has the shape of a workflow step,
// func(context.Context, I) (O, error).
func isStepSig(sig *types.Signature) bool {
	return sig.Params().Len() == 2 && isNamed(sig.Params().At(0).Type(), "context", "Context") &&
		sig.Results().Len() == 2 && types.Identical(sig.Results().At(1).Type(), types.Universe.Lookup("error").Type())
}

// isDurableStepSig reports whether a function has the shape of a durable step,
// func(context.Context) (T, error).
func isDurableStepSig(sig *types.Signature) bool {
	return sig.Params().Len() == 1 && isNamed(sig.Params().At(0).Type(), "context", "Context") &&
		sig.Results().Len() == 2 && types.Identical(sig.Results().At(1).Type(), types.Universe.Lookup("error").Type())
}

func isNamed(t types.Type, path, name string) bool {
	n, ok := types.Unalias(t).(*types.Named)
	if !ok {
		return false
	}
	obj := n.Obj()
	return obj.Name() == name && obj.Pkg() != nil && obj.Pkg().Path() == path
}

// work is a function body to check as d's code: a root, named by name, or a
// function reached from the root named from.
type work struct {
	body       *ast.BlockStmt
	name, from string
	d          *dialect
}

// check walks every root and, breadth first, the same-package functions they call.
func (c *checker) check() {
	var queue []work
	for _, r := range c.roots {
		switch n := r.node.(type) {
		case *ast.FuncDecl:
			c.visited[visit{n, r.d}] = true
			if !hasDirective(n.Doc) {
				queue = append(queue, work{body: n.Body, name: declName(n), d: r.d})
			}
		case *ast.FuncLit:
			p := c.pass.Fset.Position(n.Pos())
			kind, _ := strings.CutSuffix(r.d.code, " code")
			queue = append(queue, work{body: n.Body, name: fmt.Sprintf("the %s function literal at %s:%d", kind, filepath.Base(p.Filename), p.Line), d: r.d})
		}
	}
	for len(queue) > 0 {
		w := queue[0]
		queue = queue[1:]
		for _, callee := range c.walk(w) {
			if c.visited[visit{callee, w.d}] {
				continue
			}
			c.visited[visit{callee, w.d}] = true
			if hasDirective(callee.Doc) {
				continue
			}
			from := w.from
			if from == "" {
				from = w.name
			}
			queue = append(queue, work{body: callee.Body, from: from, d: w.d})
		}
	}
}

// declName names a function or method declaration as T.M or F.
func declName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	if t := recvTypeName(d.Recv.List[0].Type); t != "" {
		return t + "." + d.Name.Name
	}
	return d.Name.Name
}

// recvTypeName returns the type name of a receiver: T for T, *T, T[P] and (*T).
func recvTypeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.StarExpr:
		return recvTypeName(x.X)
	case *ast.ParenExpr:
		return recvTypeName(x.X)
	case *ast.IndexExpr:
		return recvTypeName(x.X)
	case *ast.IndexListExpr:
		return recvTypeName(x.X)
	}
	return ""
}

// walk reports the findings in one body and returns the same-package functions it
// calls.
func (c *checker) walk(w work) []*ast.FuncDecl {
	info := c.pass.TypesInfo
	var callees []*ast.FuncDecl
	seen := map[*ast.Ident]bool{}
	calledLits := c.calledVarLits(w.body)
	report := func(n ast.Node, format string, args ...any) {
		pos := c.pass.Fset.Position(n.Pos())
		pos.Column, pos.Offset = 0, 0
		if c.ignored[pos] {
			return
		}
		msg := fmt.Sprintf(format, args...)
		if w.from != "" {
			msg += " (reached from " + w.from + ")"
		}
		c.pass.Report(analysis.Diagnostic{Pos: n.Pos(), End: n.End(), Message: msg})
	}
	ast.Inspect(w.body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			if c.steps[n] {
				return false // a step function: I/O belongs there
			}
			if c.rootLits[n] {
				return false // a nested root is walked on its own
			}
			// A literal of a step function's shape is a step, wherever it is passed
			// from (a step factory, a table of steps), unless the checked code calls
			// it.
			sig, _ := info.TypeOf(n).(*types.Signature)
			return calledLits[n] || sig == nil || !w.d.stepShape(sig)
		case *ast.GoStmt:
			report(n, "%s", w.d.goStmt)
		case *ast.SelectStmt:
			report(n, "%s", w.d.selectStmt)
			for _, cl := range n.Body.List {
				c.markCommOp(cl.(*ast.CommClause).Comm)
			}
		case *ast.SendStmt:
			if !c.skipOps[n] {
				report(n, "%s", w.d.send)
			}
		case *ast.UnaryExpr:
			if n.Op == token.ARROW && !c.skipOps[n] {
				report(n, "%s", w.d.recv)
			}
		case *ast.RangeStmt:
			c.checkRange(n, w.d, report)
		case *ast.CallExpr:
			if lit, ok := ast.Unparen(n.Fun).(*ast.FuncLit); ok {
				calledLits[lit] = true
			}
			if msg := printCall(info, n, w.d); msg != "" {
				report(n, "%s", msg)
			}
			if fn := typeutil.StaticCallee(info, n); fn != nil && fn.Pkg() == c.pass.Pkg {
				if d := c.decls[fn.Origin()]; d != nil {
					callees = append(callees, d)
				}
			}
		case *ast.SelectorExpr:
			// Report a qualified use (time.Now, f.Write) from its start.
			if msg := c.forbiddenUse(n.Sel, w.d); msg != "" {
				report(n, "%s", msg)
				seen[n.Sel] = true
			}
		case *ast.Ident:
			if msg := c.forbiddenUse(n, w.d); msg != "" && !seen[n] {
				report(n, "%s", msg)
			}
		}
		return true
	})
	return callees
}

// calledVarLits returns the function literals that body stores in a local
// variable and then calls through it (stamp := func(...) {...}; stamp(ctx, in)):
// they run in the checked code, whatever their shape. A call made inside a step
// or another root does not count: that code is not the checked code.
func (c *checker) calledVarLits(body *ast.BlockStmt) map[*ast.FuncLit]bool {
	info := c.pass.TypesInfo
	lits := map[types.Object][]*ast.FuncLit{}
	called := map[types.Object]bool{}
	bind := func(lhs ast.Expr, rhs ast.Expr) {
		id, ok := ast.Unparen(lhs).(*ast.Ident)
		lit, isLit := ast.Unparen(rhs).(*ast.FuncLit)
		if !ok || !isLit {
			return
		}
		obj := info.Defs[id]
		if obj == nil {
			obj = info.Uses[id]
		}
		if v, ok := obj.(*types.Var); ok && !v.IsField() {
			lits[v] = append(lits[v], lit)
		}
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return !c.steps[n] && !c.rootLits[n]
		case *ast.AssignStmt:
			if len(n.Lhs) == len(n.Rhs) {
				for i := range n.Lhs {
					bind(n.Lhs[i], n.Rhs[i])
				}
			}
		case *ast.ValueSpec:
			if len(n.Names) == len(n.Values) {
				for i := range n.Names {
					bind(n.Names[i], n.Values[i])
				}
			}
		case *ast.CallExpr:
			if id, ok := ast.Unparen(n.Fun).(*ast.Ident); ok {
				if v, ok := info.Uses[id].(*types.Var); ok {
					called[v] = true
				}
			}
		}
		return true
	})
	out := map[*ast.FuncLit]bool{}
	for v, ls := range lits {
		if called[v] {
			for _, l := range ls {
				out[l] = true
			}
		}
	}
	return out
}

// logOutputs are the functions of package log, and methods of *log.Logger, that
// write a record.
var logOutputs = map[string]bool{
	"Print": true, "Printf": true, "Println": true, "Fatal": true, "Fatalf": true, "Fatalln": true,
	"Panic": true, "Panicf": true, "Panicln": true, "Output": true,
}

// printCall returns the finding for a call of call that prints in d's code, or
// "": fmt.Print, Printf and Println, fmt.Fprint* to os.Stdout or os.Stderr, and
// the output functions of the std log package and its loggers. A print into a
// buffer or a string is deterministic and not reported.
func printCall(info *types.Info, call *ast.CallExpr, d *dialect) string {
	fn := typeutil.StaticCallee(info, call)
	if fn == nil || fn.Pkg() == nil {
		return ""
	}
	use := fn.FullName() + " in " + d.code + " " + d.print
	switch fn.Pkg().Path() {
	case "fmt":
		switch fn.Name() {
		case "Print", "Printf", "Println":
			return use
		case "Fprint", "Fprintf", "Fprintln":
			if len(call.Args) > 0 && isStdStream(info, call.Args[0]) {
				return use
			}
		}
	case "log":
		if logOutputs[fn.Name()] {
			return use
		}
	}
	return ""
}

// isStdStream reports whether e is os.Stdout or os.Stderr.
func isStdStream(info *types.Info, e ast.Expr) bool {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	v, ok := info.Uses[sel.Sel].(*types.Var)
	return ok && v.Pkg() != nil && v.Pkg().Path() == "os" && (v.Name() == "Stdout" || v.Name() == "Stderr")
}

// forbiddenUse returns the finding for a use of id in d's code, or "".
func (c *checker) forbiddenUse(id *ast.Ident, d *dialect) string {
	if fn, ok := c.pass.TypesInfo.Uses[id].(*types.Func); ok {
		return forbidden(fn.Origin(), d)
	}
	return ""
}

// markCommOp marks the channel operation of a select case, which the select
// statement's finding already covers.
func (c *checker) markCommOp(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.SendStmt:
		c.skipOps[s] = true
	case *ast.ExprStmt:
		c.markRecv(s.X)
	case *ast.AssignStmt:
		if len(s.Rhs) == 1 {
			c.markRecv(s.Rhs[0])
		}
	}
}

func (c *checker) markRecv(e ast.Expr) {
	if u, ok := ast.Unparen(e).(*ast.UnaryExpr); ok && u.Op == token.ARROW {
		c.skipOps[u] = true
	}
}

func (c *checker) checkRange(n *ast.RangeStmt, d *dialect, report func(ast.Node, string, ...any)) {
	const sortKeys = "sort the keys (slices.Sorted(maps.Keys(m)))"
	t := c.pass.TypesInfo.TypeOf(n.X)
	if t == nil {
		return
	}
	switch coreType(t).(type) {
	case *types.Map:
		report(n.X, "range over a map in %s visits keys in a different order on each replay: %s", d.code, sortKeys)
		return
	case *types.Chan:
		report(n.X, "%s", d.rangeChan)
		return
	}
	if call, ok := ast.Unparen(n.X).(*ast.CallExpr); ok {
		if fn := typeutil.StaticCallee(c.pass.TypesInfo, call); fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "maps" {
			switch fn.Name() {
			case "Keys", "Values", "All":
				report(n.X, "range over maps.%s in %s visits keys in a different order on each replay: %s", fn.Name(), d.code, sortKeys)
			}
		}
	}
}

// coreType returns the underlying type of t or, for a type parameter, the
// underlying type every type in its constraint shares (a ~map[K]V constraint makes
// ranging over the parameter a map range), or nil when there is none.
func coreType(t types.Type) types.Type {
	tp, ok := types.Unalias(t).(*types.TypeParam)
	if !ok {
		return t.Underlying()
	}
	iface, ok := tp.Constraint().Underlying().(*types.Interface)
	if !ok {
		return nil
	}
	var core types.Type
	share := func(u types.Type) bool {
		if core == nil {
			core = u
		}
		return types.Identical(core, u)
	}
	for i := range iface.NumEmbeddeds() {
		switch e := iface.EmbeddedType(i).(type) {
		case *types.Union:
			for j := range e.Len() {
				if !share(e.Term(j).Type().Underlying()) {
					return nil
				}
			}
		case *types.Interface, *types.Named:
			// A method set or a named constraint: no structural terms here.
		default:
			if !share(e.Underlying()) {
				return nil
			}
		}
	}
	return core
}

// ioPackages are the packages whose functions and methods do I/O.
var ioPackages = map[string]bool{
	"os": true, "net": true, "net/http": true, "io": true, "io/ioutil": true,
}

// pureFuncs are functions of ioPackages that do no I/O.
var pureFuncs = map[string]bool{
	"os.IsExist": true, "os.IsNotExist": true, "os.IsPermission": true, "os.IsTimeout": true,
	"os.IsPathSeparator": true,
	"net.ParseIP":        true, "net.ParseCIDR": true, "net.ParseMAC": true, "net.JoinHostPort": true,
	"net.SplitHostPort": true, "net.IPv4": true, "net.IPv4Mask": true, "net.CIDRMask": true,
	"net/http.StatusText": true, "net/http.CanonicalHeaderKey": true, "net/http.DetectContentType": true,
	"net/http.ParseHTTPVersion": true, "net/http.ParseTime": true,
}

// pureTypes are types of ioPackages whose methods do no I/O.
var pureTypes = map[string]bool{
	"net.IP": true, "net.IPMask": true, "net.IPNet": true, "net.HardwareAddr": true,
	"net/http.Header": true, "net/http.Cookie": true,
}

// forbidden returns the finding for a use of fn in d's code, or "".
func forbidden(fn *types.Func, d *dialect) string {
	if fn.Pkg() == nil {
		return ""
	}
	// use begins every finding: time.Now in workflow code …
	path, use := fn.Pkg().Path(), fn.FullName()+" in "+d.code+" "
	recv := fn.Signature().Recv()
	switch path {
	case "time":
		if recv != nil {
			return ""
		}
		switch fn.Name() {
		case "Now", "Since", "Until":
			return use + d.clock
		case "Sleep":
			return use + d.sleep
		case "After", "Tick", "NewTimer", "NewTicker", "AfterFunc":
			return use + d.timer
		}
		return ""
	case "math/rand", "math/rand/v2":
		return use + d.random
	case "crypto/rand":
		return use + d.crypto
	}
	if !ioPackages[path] || pureFuncs[fn.FullName()] {
		return ""
	}
	if recv != nil {
		switch fn.Name() {
		case "Error", "Unwrap", "String", "Timeout", "Temporary":
			return ""
		}
		t := recv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if n, ok := types.Unalias(t).(*types.Named); ok && n.Obj().Pkg() != nil && pureTypes[n.Obj().Pkg().Path()+"."+n.Obj().Name()] {
			return ""
		}
	}
	return use + d.io
}
