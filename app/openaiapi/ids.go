package openaiapi

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// A response is one run of chatd's agent loop in a chat, anchored on the
// message that started it: the user message of a turn, or the tool
// results message a client posted to continue one. Its id names both, so
// it is durable and resolves on any replica without a table of its own:
// resp_<chat id, 32 hex><message id in decimal>, e.g.
// resp_0f6c...9a17. A conversation is a chat (conv_<chat id hex>); an
// item is one part of a stored message (<prefix>_<message id>_<part
// index>, the prefix telling its type: msg, rs, fc, fco, mcp).

func responseID(chat uuid.UUID, anchor int64) string {
	return "resp_" + hex.EncodeToString(chat[:]) + strconv.FormatInt(anchor, 10)
}

func parseResponseID(id string) (uuid.UUID, int64, bool) {
	rest, ok := strings.CutPrefix(id, "resp_")
	if !ok || len(rest) <= 32 {
		return uuid.Nil, 0, false
	}
	chat, err := parseHexUUID(rest[:32])
	if err != nil {
		return uuid.Nil, 0, false
	}
	n, err := strconv.ParseInt(rest[32:], 10, 64)
	if err != nil || n <= 0 {
		return uuid.Nil, 0, false
	}
	return chat, n, true
}

func conversationID(chat uuid.UUID) string { return "conv_" + hex.EncodeToString(chat[:]) }

func parseConversationID(id string) (uuid.UUID, bool) {
	rest, ok := strings.CutPrefix(id, "conv_")
	if !ok || len(rest) != 32 {
		return uuid.Nil, false
	}
	chat, err := parseHexUUID(rest)
	return chat, err == nil
}

func parseHexUUID(s string) (uuid.UUID, error) {
	var u uuid.UUID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("bad id")
	}
	copy(u[:], b)
	return u, nil
}

func itemID(prefix string, anchor int64, n int) string {
	return prefix + "_" + strconv.FormatInt(anchor, 10) + "_" + strconv.Itoa(n)
}
