// Package terraform_test checks the Terraform module against the AWS World's
// contract: its inputs and defaults, outputs, and that the IAM policies grant
// exactly the actions the World's documentation lists.
package terraform_test

import (
	"slices"
	"sort"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

func parse(t *testing.T) []*hclsyntax.Block {
	t.Helper()
	p := hclparse.NewParser()
	var blocks []*hclsyntax.Block
	for _, name := range []string{"main.tf", "variables.tf", "outputs.tf"} {
		f, diags := p.ParseHCLFile(name)
		if diags.HasErrors() {
			t.Fatalf("%s: %v", name, diags)
		}
		blocks = append(blocks, f.Body.(*hclsyntax.Body).Blocks...)
	}
	return blocks
}

func find(blocks []*hclsyntax.Block, typ string, labels ...string) *hclsyntax.Block {
	for _, b := range blocks {
		if b.Type == typ && slices.Equal(b.Labels, labels) {
			return b
		}
	}
	return nil
}

func literal(t *testing.T, b *hclsyntax.Block, attr string) cty.Value {
	t.Helper()
	a, ok := b.Body.Attributes[attr]
	if !ok {
		t.Fatalf("%s %v has no %s", b.Type, b.Labels, attr)
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		t.Fatalf("%s %v: %s is not a literal: %v", b.Type, b.Labels, attr, diags)
	}
	return v
}

func TestVariablesAndDefaults(t *testing.T) {
	t.Parallel()
	blocks := parse(t)
	want := map[string]cty.Value{
		"name":                       cty.StringVal("workflow"),
		"tags":                       cty.EmptyObjectVal,
		"point_in_time_recovery":     cty.True,
		"deletion_protection":        cty.True,
		"visibility_timeout_seconds": cty.NumberIntVal(360),
		"message_retention_seconds":  cty.NumberIntVal(1209600),
		"max_receive_count":          cty.NumberIntVal(10),
		"enable_scheduler":           cty.True,
		"worker_function_name":       cty.NullVal(cty.DynamicPseudoType),
		"batch_size":                 cty.NumberIntVal(10),
		"maximum_concurrency":        cty.NullVal(cty.DynamicPseudoType),
		"worker_role_name":           cty.NullVal(cty.DynamicPseudoType),
		"api_role_name":              cty.NullVal(cty.DynamicPseudoType),
		"queues":                     cty.EmptyObjectVal,
		// Beyond the seed's table: the one retention setting, which drives both
		// WORKFLOW_RETENTION and the conditional IAM grants, and the list shards.
		"retention":   cty.StringVal(""),
		"list_shards": cty.NumberIntVal(16),
	}
	var got []string
	for _, b := range blocks {
		if b.Type == "variable" {
			got = append(got, b.Labels[0])
		}
	}
	sort.Strings(got)
	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	if !slices.Equal(got, names) {
		t.Fatalf("variables %v, want %v", got, names)
	}
	for name, def := range want {
		v := literal(t, find(blocks, "variable", name), "default")
		if !v.RawEquals(def) && !(v.IsNull() && def.IsNull()) {
			t.Errorf("variable %s default = %#v, want %#v", name, v, def)
		}
		if _, ok := find(blocks, "variable", name).Body.Attributes["description"]; !ok {
			t.Errorf("variable %s has no description", name)
		}
	}
	// The queue object's optional fields and their defaults.
	typ := find(blocks, "variable", "queues").Body.Attributes["type"].Expr
	ty, diags := typeExprFields(typ)
	if diags != nil || !slices.Equal(ty, []string{"batch_size", "fifo", "max_receive_count", "maximum_concurrency", "visibility_timeout_seconds"}) {
		t.Errorf("queues object fields = %v (%v)", ty, diags)
	}
}

func typeExprFields(e hclsyntax.Expression) ([]string, error) {
	call, ok := e.(*hclsyntax.FunctionCallExpr) // map(object({...}))
	if !ok || call.Name != "map" {
		return nil, errString("queues type is not map(...)")
	}
	obj, ok := call.Args[0].(*hclsyntax.FunctionCallExpr)
	if !ok || obj.Name != "object" {
		return nil, errString("queues type is not map(object(...))")
	}
	cons := obj.Args[0].(*hclsyntax.ObjectConsExpr)
	var out []string
	for _, item := range cons.Items {
		out = append(out, hcl.ExprAsKeyword(item.KeyExpr))
	}
	sort.Strings(out)
	return out, nil
}

type errString string

func (e errString) Error() string { return string(e) }

func TestOutputs(t *testing.T) {
	t.Parallel()
	blocks := parse(t)
	env := find(blocks, "output", "environment")
	if env == nil {
		t.Fatal("no environment output")
	}
	merge, ok := env.Body.Attributes["value"].Expr.(*hclsyntax.FunctionCallExpr)
	if !ok || merge.Name != "merge" {
		t.Fatal("environment is not a merge(...)")
	}
	var keys []string
	hclsyntax.VisitAll(merge, func(n hclsyntax.Node) hcl.Diagnostics {
		if obj, ok := n.(*hclsyntax.ObjectConsExpr); ok {
			for _, item := range obj.Items {
				if k := hcl.ExprAsKeyword(item.KeyExpr); len(k) > 9 && k[:9] == "WORKFLOW_" {
					keys = append(keys, k)
				}
			}
		}
		return nil
	})
	sort.Strings(keys)
	want := []string{"WORKFLOW_DEAD_LETTER_RETENTION", "WORKFLOW_LIST_SHARDS", "WORKFLOW_QUEUES", "WORKFLOW_QUEUE_ARN", "WORKFLOW_QUEUE_URL", "WORKFLOW_RETENTION", "WORKFLOW_SCHEDULER_GROUP", "WORKFLOW_SCHEDULER_ROLE_ARN", "WORKFLOW_TABLE"}
	if !slices.Equal(keys, want) {
		t.Fatalf("environment keys %v, want %v", keys, want)
	}
	for _, o := range []string{"table_name", "table_arn", "queue_url", "queue_arn", "queues", "scheduler_group", "scheduler_role_arn", "worker_policy_arn", "api_policy_arn", "dead_letter_queue_url", "dead_letter_queues", "region", "retention", "event_source_mappings"} {
		if find(blocks, "output", o) == nil {
			t.Errorf("missing output %s", o)
		}
	}
}

func TestResources(t *testing.T) {
	t.Parallel()
	blocks := parse(t)
	table := find(blocks, "resource", "aws_dynamodb_table", "this")
	if v := literal(t, table, "billing_mode"); v.AsString() != "PAY_PER_REQUEST" {
		t.Errorf("billing_mode %v", v)
	}
	var gsis []string
	for _, b := range table.Body.Blocks {
		switch b.Type {
		case "global_secondary_index":
			gsis = append(gsis, literal(t, b, "name").AsString()+"/"+literal(t, b, "hash_key").AsString()+"/"+literal(t, b, "range_key").AsString()+"/"+literal(t, b, "projection_type").AsString())
			if literal(t, b, "projection_type").AsString() == "KEYS_ONLY" {
				break
			}
			if nk := literal(t, b, "non_key_attributes"); !nk.RawEquals(cty.TupleVal([]cty.Value{cty.StringVal("status")})) {
				t.Errorf("index projects %#v, want status", nk)
			}
		case "server_side_encryption":
			if !literal(t, b, "enabled").True() {
				t.Error("encryption off")
			}
		case "point_in_time_recovery":
			if got := varRef(b, "enabled"); got != "point_in_time_recovery" {
				t.Errorf("PITR enabled by var.%s", got)
			}
		}
	}
	if got := varRef(table, "deletion_protection_enabled"); got != "deletion_protection" {
		t.Errorf("deletion protection set by var.%s", got)
	}
	if !slices.Equal(gsis, []string{"list/list_pk/list_sk/INCLUDE", "list_group/list_group_pk/list_group_sk/INCLUDE", "attrs/attr_pk/attr_sk/KEYS_ONLY"}) {
		t.Errorf("indexes %v", gsis)
	}
	for _, name := range []string{"task", "routed"} {
		esm := find(blocks, "resource", "aws_lambda_event_source_mapping", name)
		if v := literal(t, esm, "function_response_types"); !v.RawEquals(cty.TupleVal([]cty.Value{cty.StringVal("ReportBatchItemFailures")})) {
			t.Errorf("event source mapping %s: function_response_types %#v", name, v)
		}
		var scaling bool
		for _, b := range esm.Body.Blocks {
			scaling = scaling || (b.Type == "dynamic" && b.Labels[0] == "scaling_config")
		}
		if !scaling {
			t.Errorf("event source mapping %s has no scaling_config", name)
		}
	}
	routed := find(blocks, "resource", "aws_sqs_queue", "routed")
	for _, a := range []string{"fifo_queue", "content_based_deduplication", "redrive_policy"} {
		if _, ok := routed.Body.Attributes[a]; !ok {
			t.Errorf("routed queues lack %s", a)
		}
	}
	if _, ok := find(blocks, "resource", "aws_sqs_queue", "task").Body.Attributes["redrive_policy"]; !ok {
		t.Error("task queue has no dead-letter queue")
	}
	for _, r := range [][2]string{{"aws_scheduler_schedule_group", "this"}, {"aws_iam_role", "scheduler"}, {"aws_iam_role_policy_attachment", "worker"}, {"aws_iam_role_policy_attachment", "api"}} {
		if find(blocks, "resource", r[0], r[1]) == nil {
			t.Errorf("missing resource %s.%s", r[0], r[1])
		}
	}
}

// policyActions collects every action a policy document can grant, with all its
// conditional statements on.
func policyActions(t *testing.T, blocks []*hclsyntax.Block, name string) []string {
	t.Helper()
	doc := find(blocks, "data", "aws_iam_policy_document", name)
	if doc == nil {
		t.Fatalf("no policy document %s", name)
	}
	var out []string
	for _, b := range doc.Body.Blocks {
		stmt := b
		if b.Type == "dynamic" && b.Labels[0] == "statement" {
			for _, c := range b.Body.Blocks {
				if c.Type == "content" {
					stmt = c
				}
			}
		} else if b.Type != "statement" {
			continue
		}
		for _, v := range literal(t, stmt, "actions").AsValueSlice() {
			out = append(out, v.AsString())
		}
	}
	sort.Strings(out)
	return out
}

// varRef returns X when attribute attr of b is exactly var.X.
func varRef(b *hclsyntax.Block, attr string) string {
	a, ok := b.Body.Attributes[attr]
	if !ok {
		return ""
	}
	tr, diags := hcl.AbsTraversalForExpr(a.Expr)
	if diags.HasErrors() || len(tr) != 2 || tr.RootName() != "var" {
		return ""
	}
	return tr[1].(hcl.TraverseAttr).Name
}
