package disk

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// fill sets every field reachable from v to a non-zero value, so that a
// field added later is covered too.
func fill(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if depth > 4 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth)
			}
		}
	case reflect.Slice:
		if depth > 4 || v.Type().Elem().Kind() == reflect.Uint8 {
			v.Set(reflect.ValueOf([]byte("x")).Convert(v.Type()))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x <&> ✓")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	}
}

// The fast encoder's output, read back by encoding/json, gives the value
// that was written: for states and messages with every field set, and with
// the zero values it writes out where encoding/json would omit them.
func TestFastJSONRoundTrips(t *testing.T) {
	var full runtime.ThreadState
	fill(reflect.ValueOf(&full).Elem(), 0)
	var msg runtime.Message
	fill(reflect.ValueOf(&msg).Elem(), 0)
	zero := runtime.ThreadState{Version: 1, Stack: []string{"t"}, Pending: &runtime.PendingCall{ID: "c", Name: "n"}}
	for name, v := range map[string]any{"full state": &full, "zero deadline and usage": &zero, "message": &msg} {
		b, err := marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		back := reflect.New(reflect.TypeOf(v).Elem())
		if err := json.Unmarshal(b, back.Interface()); err != nil {
			t.Fatalf("%s: encoding/json cannot read it: %v\n%s", name, err, b)
		}
		if !reflect.DeepEqual(back.Interface(), v) {
			std, _ := json.Marshal(v)
			t.Fatalf("%s changed on the way:\nfast %s\nstd  %s", name, b, std)
		}
	}
}
