package routes

import "strings"

// Notice kinds: success, warning and error. Each looks different (an icon
// and a word as well as a colour) and is announced in its own live region:
// a success in #notice (role=status, polite), a warning or an error in
// #notice-alert (role=alert), so a problem interrupts and a confirmation
// waits its turn.
const (
	noticeSuccess = "success"
	noticeWarning = "warning"
	noticeError   = "error"
)

// notice is one message for the live regions. Every response that carries
// the layout, or that htmx swaps, says the notice of its own outcome: the
// bare layout always sends both regions, so a new notice replaces the old
// one and a response with none clears them (never a stale "saved" beside
// an error).
type notice struct {
	Kind string // noticeSuccess, noticeWarning or noticeError
	Text string
}

func successNotice(text string) *notice { return &notice{Kind: noticeSuccess, Text: text} }
func warningNotice(text string) *notice { return &notice{Kind: noticeWarning, Text: text} }
func errorNotice(text string) *notice   { return &notice{Kind: noticeError, Text: text} }

// Alert reports whether the notice belongs in the role=alert region.
func (n *notice) Alert() bool { return n.Kind == noticeWarning || n.Kind == noticeError }

// Label is the word shown before the text: the kind, not by colour alone.
func (n *notice) Label() string {
	switch n.Kind {
	case noticeWarning:
		return "Warning"
	case noticeError:
		return "Error"
	}
	return "Success"
}

// Status is the notice for the role=status region, or nil.
func (v *view) StatusNotice() *notice {
	if v.Notice != nil && !v.Notice.Alert() {
		return v.Notice
	}
	return nil
}

// AlertNotice is the notice for the role=alert region, or nil.
func (v *view) AlertNotice() *notice {
	if v.Notice != nil && v.Notice.Alert() {
		return v.Notice
	}
	return nil
}

// encodeFlash and decodeFlash carry a notice in the flash cookie as
// "kind:text"; a value without a known kind is shown whole as a success
// (a plain text flash), so no cookie's text is lost.
func encodeFlash(n *notice) string { return n.Kind + ":" + n.Text }

func decodeFlash(s string) *notice {
	if kind, text, ok := strings.Cut(s, ":"); ok {
		switch kind {
		case noticeSuccess, noticeWarning, noticeError:
			return &notice{Kind: kind, Text: text}
		}
	}
	return successNotice(s)
}
