package stack

// Helpers for the assertions tests: plain Go over the synthesized template's
// JSON (Template.ToJSON), for checks the CDK matchers express poorly, such as
// "this role's whole policy is exactly this list".

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"
)

type grant struct {
	actions  []string
	resource any // one resolved value, or []any of them
}

// grantSet flattens grants into sorted "action on resource" strings.
func grantSet(gs []grant) []string {
	set := map[string]bool{}
	for _, g := range gs {
		res := []any{g.resource}
		if list, ok := g.resource.([]any); ok {
			res = list
		}
		for _, a := range g.actions {
			for _, r := range res {
				set[a+" on "+js(r)] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// roleGrants collects the Allow statements of every AWS::IAM::Policy
// attached to the role whose ARN resolves to roleArn.
func roleGrants(t *testing.T, tj map[string]any, roleArn any) []grant {
	t.Helper()
	getAtt, _ := roleArn.(obj)["Fn::GetAtt"].([]any)
	if len(getAtt) != 2 {
		t.Fatalf("role ARN %s is not a GetAtt", js(roleArn))
	}
	ref := obj{"Ref": getAtt[0]}
	var out []grant
	for id, r := range resources(tj, "AWS::IAM::Policy") {
		p := props(r)
		attached := false
		for _, role := range p["Roles"].([]any) {
			attached = attached || sameJSON(role, ref)
		}
		if !attached {
			continue
		}
		doc := p["PolicyDocument"].(obj)
		for _, st := range doc["Statement"].([]any) {
			st := st.(obj)
			if st["Effect"] != "Allow" {
				t.Errorf("policy %s: statement %s is not Allow", id, js(st))
				continue
			}
			var actions []string
			switch a := st["Action"].(type) {
			case string:
				actions = []string{a}
			case []any:
				for _, x := range a {
					actions = append(actions, x.(string))
				}
			}
			out = append(out, grant{actions, st["Resource"]})
		}
	}
	return out
}

func resources(tj map[string]any, typ string) map[string]obj {
	out := map[string]obj{}
	for id, r := range tj["Resources"].(obj) {
		if r := r.(obj); r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

func props(r obj) obj {
	p, _ := r["Properties"].(obj)
	return p
}

// propsOf returns the properties of the resource that resolved (a Ref or a
// GetAtt of it) points at.
func propsOf(t *testing.T, tj map[string]any, resolved any) obj {
	t.Helper()
	m, _ := resolved.(obj)
	var id any
	if ref, ok := m["Ref"]; ok {
		id = ref
	} else if ga, ok := m["Fn::GetAtt"].([]any); ok && len(ga) == 2 {
		id = ga[0]
	}
	r, ok := tj["Resources"].(obj)[fmt.Sprint(id)].(obj)
	if !ok {
		t.Fatalf("no resource for %s", js(resolved))
	}
	return props(r)
}

func envOf(t *testing.T, tj map[string]any, fnArn any) obj {
	t.Helper()
	env, _ := propsOf(t, tj, fnArn)["Environment"].(obj)
	vars, _ := env["Variables"].(obj)
	return vars
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// sameJSON compares two values by their JSON (numbers as numbers,
// map order ignored).
func sameJSON(a, b any) bool {
	var x, y any
	if json.Unmarshal([]byte(js(a)), &x) != nil || json.Unmarshal([]byte(js(b)), &y) != nil {
		return false
	}
	return js(x) == js(y)
}
