// Package pin records what an MCP server shows the model the first time it is
// seen, and locks the session when that changes until a person has looked at
// the change (`mcpcage diff`) and accepted it (`mcpcage approve`).
//
// # What is pinned
//
// Every item of the four lists a server offers, whole, whatever members it
// has (a member a future protocol adds is pinned too): tools (by "name"),
// prompts with their arguments (by "name"), resources (by "uri") and resource
// templates (by "uriTemplate"); and the server's "instructions" from the
// initialize (or server/discover) result. An item is compared by its
// CanonicalItem form: RFC 8785 canonicalization (member order, whitespace and
// string escapes never count, integers kept digit for digit), less an empty
// value (null, {} or [] as itemDefaults lists) of the optional top-level
// members the MCP schema defines, so "no annotations" and "annotations": {}
// never differ. Nothing else is dropped: an empty member inside a schema or
// under any other name is what the client receives, and counts. Anything
// else is drift: a flip of destructiveHint from false to true, a zero-width
// character added to a description, a tool added or removed. A list that
// names one item twice is refused, never guessed about.
//
// # Behaviour in a session (Policy)
//
// On a client's cursor-less tools/list (prompts/list, resources/list,
// resources/templates/list) the policy walks every page itself with the
// proxy's own requests, compares the complete list with the pins, and answers
// the client with one page. A walk longer than MaxPages pages, larger than
// MaxBytes, with more than MaxItems items, slower than WalkTimeout, or whose
// cursor comes back, fails closed with a -32001 error that says which, and
// nothing is pinned. Then:
//
//   - first use (no pins for that list): the list is pinned and served (trust
//     on first use), unless Strict, where it is stored as pending and the
//     session is locked until it is approved;
//   - no change: served;
//   - drift: the list as received is stored as pending (for diff), the kind
//     is locked and the list request gets
//     {"code":-32001,"message":"mcpcage blocked tools/list: tool definitions of
//     \"NAME\" changed since they were approved (rug-pull protection). N
//     high-severity signs of hidden instructions. Run `mcpcage diff NAME`."}
//     (the N sentence only when Config.HighFindings finds some).
//
// While tools (or instructions) are locked every tools/call is answered by the
// policy with a result {"isError":true} whose text says what happened and
// which commands to run; it never reaches the server. A drifted prompt's
// prompts/get and a drifted resource's resources/read get a -32001 error.
// Changed instructions are removed from the initialize result until approved.
// At every call: a tool that was never approved, or that the Filter hides,
// gets -32602 "Unknown tool: NAME"; a call that comes before any list in the
// session makes the policy compare first. notifications/*/list_changed pass
// through, and the next list is compared again, so drift in the middle of a
// session locks it. Every list re-reads the pin file, and so does a call in a
// locked session once the pin file has changed, so an approval made in
// another terminal takes effect at the locked session's next list or call.
//
// # Pin files
//
// Store keeps one file per server, $MCPCAGE_HOME/pins/FILE.json, where FILE is
// the server's name with every byte outside [A-Za-z0-9_-] (and a leading dot)
// written %XX (FileName). Writes happen under an exclusive flock of
// FILE.json.lock, to a temporary file that is synced and renamed over the old
// one (mode 0600). The format, byte for byte as Marshal writes it
// (testdata/good_v1.json is the vector):
//
//	{
//	  "format": "mcpcage-pins/1",
//	  "server": "NAME",
//	  "approved": {
//	    "time": "RFC 3339 UTC time of the approval",
//	    "launch": {"kind":"npx","package":"...","version":"...","image":"...","image_digest":"sha256:...","argv":[...]},
//	    "instructions": "...",
//	    "tools": [
//	      {one tool exactly as the server sent it, whitespace between tokens removed},
//	      ...
//	    ],
//	    "prompts": [...],
//	    "resources": [...],
//	    "resourceTemplates": [...]
//	  },
//	  "pending": { the same members, holding only the lists that wait for approval }
//	}
//
// "approved" and "pending" are omitted when empty, and so is each list that
// was never seen; "[]" is a list seen empty. Launch members are those of
// launch.Launch, empty ones omitted. Reading (Parse) is strict because the
// file is untrusted input: valid UTF-8 JSON, no duplicate member names at any
// depth, no unknown members, names matched exactly (case counts), the format
// string above, every item an object with its identifying member, no item
// listed twice, at most MaxFileSize bytes.
//
// PendingHash names a pending set: the first 16 hex digits of SHA-256 over
// "launch <len> <canonical launch>\n" then, for each pending kind in the order
// instructions, tools, prompts, resources, resourceTemplates, "kind <kind>
// <count>\n" and "<len> <canonical item>\n" per item sorted by key. `mcpcage
// approve --hash` approves only the set that hash names.
//
// # Threat model
//
// Defends against a server (or an update of it) that changes what the model
// reads after it was trusted: tool descriptions, schemas, annotations,
// prompts, resources, instructions. Does not defend against a server that was
// malicious the first time it was seen (use Strict), against a server that
// behaves differently without changing what it shows, against tool results
// (the scanner reads those), or against anything that can write to
// $MCPCAGE_HOME (it can rewrite pins).
package pin
