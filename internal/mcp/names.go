package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxToolNameLen is the longest tool name the proxy offers: the strictest
// limit of the model providers (Amazon Bedrock and OpenAI both accept
// ^[a-zA-Z0-9_-]{1,64}$), below RAP's own 128.
const MaxToolNameLen = 64

// prefixServerLen is the longest server name a tool prefix carries whole;
// a longer one is cut and made unique by a hash, so that every prefix
// leaves at least 30 characters for the tool's own name.
const prefixServerLen = 32

// ToolPrefix is what every tool the proxy of server offers starts with:
// server + "__", or for a server name longer than 32 characters its first
// 23 characters, "_", 8 hex digits of its SHA-256 and "__" (34 in all).
func ToolPrefix(server string) string {
	if len(server) <= prefixServerLen {
		return server + "__"
	}
	return server[:23] + "_" + shortHash(server) + "__"
}

// ToolName is the name under which the proxy of server offers the MCP tool
// named tool: ToolPrefix(server) + tool when that fits MaxToolNameLen and
// tool is made of [A-Za-z0-9_-] only. Otherwise (a tool name that is too
// long, or has dots, slashes or other characters) it is shortened
// deterministically: the tool name with every other character replaced by
// "_", cut to fit, then "_" and 8 hex digits of the SHA-256 of the original
// tool name, so two MCP tools whose names differ stay apart.
func ToolName(server, tool string) string {
	prefix := ToolPrefix(server)
	budget := MaxToolNameLen - len(prefix)
	if tool != "" && len(tool) <= budget && validName(tool) {
		return prefix + tool
	}
	var b strings.Builder
	for _, r := range tool {
		if nameChar(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String() // ASCII only: cutting by bytes is safe
	if keep := budget - 9; len(s) > keep {
		s = s[:keep]
	}
	return prefix + s + "_" + shortHash(tool)
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

func nameChar(r rune) bool {
	return r == '_' || r == '-' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
}

func validName(s string) bool {
	for _, r := range s {
		if !nameChar(r) {
			return false
		}
	}
	return true
}
