package server

import (
	"net/http"
	"slices"
)

// What a person may pick from (the console's agent picker and model
// switch):
//
//	GET /agents  {"agents": [{"name", "model"?, "tools"?, "priority"?}], "default": name} (no agents: [] and "")
//	GET /models  {"models": [{"name", "provider"}], "default": name} (no catalog: the one model the server runs)
//
// Only names and what an agent may use are listed: instructions and the
// models' settings (endpoints, keys) stay on the server.

// agentInfo is one agent of GET /agents.
type agentInfo struct {
	Name string `json:"name"`
	// Model is its catalog model ("": the server's default model).
	Model string `json:"model,omitempty"`
	// Tools are the toolsets it may use (absent: all of them).
	Tools    []string `json:"tools,omitempty"`
	Priority string   `json:"priority,omitempty"`
}

type agentsResponse struct {
	Agents  []agentInfo `json:"agents"`
	Default string      `json:"default"`
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	resp := agentsResponse{Agents: []agentInfo{}}
	if s.agents != nil {
		for _, n := range s.agents.Names() {
			v, ok := s.agents.Agent(n)
			if !ok {
				continue // replaced between the two reads
			}
			resp.Agents = append(resp.Agents, agentInfo{Name: n, Model: v.Agent.Model, Tools: slices.Clone(v.Agent.Tools), Priority: v.Agent.Priority})
		}
		resp.Default = s.agents.Default()
	}
	writeJSON(w, http.StatusOK, resp)
}

// modelInfo is one model of GET /models.
type modelInfo struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
}

type modelsResponse struct {
	Models  []modelInfo `json:"models"`
	Default string      `json:"default"`
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	def := s.set.model
	resp := modelsResponse{Default: def.Name}
	if s.cfg.Models == nil {
		resp.Models = []modelInfo{{Name: def.Name, Provider: string(def.Provider)}}
	} else {
		for _, m := range s.cfg.Models.Models {
			resp.Models = append(resp.Models, modelInfo{Name: m.Name, Provider: string(m.Provider)})
		}
	}
	writeJSON(w, http.StatusOK, resp)
}
