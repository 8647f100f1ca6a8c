package terraform_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// iamPrefix maps an AWS SDK service package to its IAM action prefix. A client
// interface on a service missing here fails the test, so a new service is
// granted deliberately.
var iamPrefix = map[string]string{
	"github.com/aws/aws-sdk-go-v2/service/dynamodb":  "dynamodb",
	"github.com/aws/aws-sdk-go-v2/service/sqs":       "sqs",
	"github.com/aws/aws-sdk-go-v2/service/scheduler": "scheduler",
}

// transactItemAction names the action that authorizes each member of a
// dynamodb types.TransactWriteItem: IAM has no TransactWriteItems action.
var transactItemAction = map[string]string{
	"Put":            "dynamodb:PutItem",
	"Update":         "dynamodb:UpdateItem",
	"Delete":         "dynamodb:DeleteItem",
	"ConditionCheck": "dynamodb:ConditionCheckItem",
}

// lambdaPollerActions are what Lambda's SQS event source mapping calls with the
// function's role (the AWSLambdaSQSQueueExecutionRole actions), not the Go code.
var lambdaPollerActions = []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"}

// operatorActions are what the Go code calls only from an operator's one-off
// command, never from a function: the module must not grant them, and the
// README tells operators to run those commands with their own credentials.
// dynamodb:Scan is World.IndexLegacyQueueRecords (awsworld.ScanAPI), which
// reads the whole table once after an upgrade.
var operatorActions = []string{"dynamodb:Scan"}

// goCalls parses the AWS World's package and returns the IAM actions its narrow
// client interfaces can call: one per interface method whose input is an AWS SDK
// service type, TransactWriteItems resolved to the item kinds the code builds,
// and iam:PassRole for CreateSchedule (its target names the Scheduler role).
func goCalls(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	methods := 0
	transactKinds := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		imports := map[string]string{} // local name -> import path
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			local := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				local = im.Name.Name
			}
			imports[local] = path
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.InterfaceType:
				for _, m := range n.Methods.List {
					fn, ok := m.Type.(*ast.FuncType)
					if !ok || len(m.Names) == 0 || len(fn.Params.List) < 2 {
						continue
					}
					star, ok := fn.Params.List[1].Type.(*ast.StarExpr)
					if !ok {
						continue
					}
					sel, ok := star.X.(*ast.SelectorExpr)
					if !ok {
						continue
					}
					pkg, ok := sel.X.(*ast.Ident)
					if !ok || !strings.HasPrefix(imports[pkg.Name], "github.com/aws/aws-sdk-go-v2/service/") {
						continue
					}
					prefix, known := iamPrefix[imports[pkg.Name]]
					if !known {
						t.Errorf("%s: %s calls %s, a service without IAM mapping in this test", fset.Position(m.Pos()), m.Names[0].Name, imports[pkg.Name])
						continue
					}
					methods++
					switch name := m.Names[0].Name; name {
					case "TransactWriteItems":
						set["dynamodb:TransactWriteItems"] = true // resolved below
					case "TransactGetItems":
						set["dynamodb:GetItem"] = true
					default:
						set[prefix+":"+name] = true
						if name == "CreateSchedule" {
							set["iam:PassRole"] = true
						}
					}
				}
			case *ast.CompositeLit:
				sel, ok := n.Type.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "TransactWriteItem" {
					return true
				}
				for _, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						if k, ok := kv.Key.(*ast.Ident); ok {
							transactKinds[k.Name] = true
						}
					}
				}
			}
			return true
		})
	}
	if methods == 0 {
		t.Fatal("found no AWS client interface methods in package awsworld")
	}
	if set["dynamodb:TransactWriteItems"] {
		delete(set, "dynamodb:TransactWriteItems")
		if len(transactKinds) == 0 {
			t.Error("TransactWriteItems is called but no types.TransactWriteItem literal was found")
		}
		for k := range transactKinds {
			a, ok := transactItemAction[k]
			if !ok {
				t.Errorf("types.TransactWriteItem.%s has no IAM mapping in this test", k)
				continue
			}
			set[a] = true
		}
	}
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// The worker runs every code path of the World (the Queue handler, expiry,
// scheduling), so its policy with every feature on must grant exactly what the
// Go client interfaces call plus what Lambda's poller calls: a call the module
// does not grant fails in production with AccessDenied, and a grant no code
// calls is privilege nobody needs.
func TestWorkerPolicyGrantsExactlyTheGoCalls(t *testing.T) {
	t.Parallel()
	calls := goCalls(t)
	for _, a := range operatorActions {
		if !slices.Contains(calls, a) {
			t.Errorf("operator-only action %s is no longer called by the Go code: drop it from operatorActions", a)
		}
	}
	calls = slices.DeleteFunc(calls, func(a string) bool { return slices.Contains(operatorActions, a) })
	want := append(calls, lambdaPollerActions...)
	sort.Strings(want)
	want = slices.Compact(want)
	got := policyActions(t, parse(t), "worker")
	got = slices.Compact(got)
	if !slices.Equal(got, want) {
		t.Errorf("worker policy (every feature on)\n grants %v\n  calls %v (Go client interfaces + Lambda's SQS poller)", got, want)
	}
}

// The API runs a subset of the same World code (no Queue handler), so it may
// grant nothing beyond the worker and nothing the Go code does not call.
func TestAPIPolicyIsWithinTheGoCalls(t *testing.T) {
	t.Parallel()
	calls := goCalls(t)
	for _, a := range policyActions(t, parse(t), "api") {
		if !slices.Contains(calls, a) {
			t.Errorf("api policy grants %s, which no Go client interface calls", a)
		}
		if slices.Contains(operatorActions, a) {
			t.Errorf("api policy grants %s, which only an operator's one-off command calls", a)
		}
	}
	if got := policyActions(t, parse(t), "scheduler_send"); !slices.Equal(got, []string{"sqs:SendMessage"}) {
		t.Errorf("scheduler role actions %v, want [sqs:SendMessage]", got)
	}
}
