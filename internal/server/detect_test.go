package server_test

import (
	"net/http"
	"testing"

	"github.com/ragmem/ragmem/rag"
)

// TestDetectEveryStatement: a message with two preference statements
// yields both, and save stores both (intent and saved stay the first, as
// before).
func TestDetectEveryStatement(t *testing.T) {
	ts := newTestServer(t, nil)
	var det rag.DetectJSON
	ts.must(http.StatusOK, "POST", "/v1/preferences/detect", map[string]any{
		"message": "I'm a data scientist, explain like I'm new to Go. How do I read a CSV file?", "save": true,
	}).json(t, &det)
	if !det.Detected || len(det.Intents) != 2 || len(det.SavedAll) != 2 || det.Intent == nil || *det.Intent != det.Intents[0] ||
		det.Saved == nil || det.Saved.ID != det.SavedAll[0].ID {
		t.Fatalf("detect: %+v", det)
	}
	if det.Intents[0].Content != "User is a data scientist" || det.Intents[1].Content != "Explain like the user is new to Go" {
		t.Errorf("intents %+v", det.Intents)
	}
	var list struct {
		Preferences []struct{ ID, Content string }
	}
	ts.must(http.StatusOK, "GET", "/v1/preferences", nil).json(t, &list)
	if len(list.Preferences) != 2 {
		t.Errorf("saved preferences: %+v", list.Preferences)
	}
}
