package disk

import (
	"encoding/json"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func appendItems(id string, first int, items []runtime.Item) []byte {
	return local.AppendItems(nil, id, "", first, items)
}
