// Package scan looks for signs of hidden instructions in everything an MCP
// server shows the model, with fixed local rules (rules/). Nothing is sent
// anywhere: the rules are embedded in the binary and run in-process.
//
// # What is scanned
//
// Item scans one definition (a tool, prompt, resource, resource template, or
// the server's instructions); Tools scans a whole tools/list; Result scans a
// tools/call, prompts/get or resources/read result (every string; only the
// base64 "data" of an image or audio content block and the base64 "blob" of
// resource contents are left out as binary, a "data" or "blob" anywhere else
// is text); Error scans a JSON-RPC error's message and data; Params scans
// what a server sends on its own (sampling and elicitation requests, log and
// progress notifications); Text scans one string. Every string value and every object member name that
// is not a fixed keyword of MCP or JSON Schema is scanned, with its JSON path:
// "description", "inputSchema.properties.path.description",
// "inputSchema.properties[\"name\"]" for a property's name, "enum[2]" for an
// array element, and ["..."] for member names that are not plain identifiers.
// Nesting deeper than 128 levels (the pins' own limit), strings past 1 MiB
// and more than 20000 strings per item are not read, which keeps a scan
// linear in its input; reaching one of these bounds is itself a HIGH
// finding (unscanned-text), once per bound and item, so nothing is skipped
// in silence and --block-results withholds what was not read.
//
// # How a string is read
//
// Rules with "on": "raw" (invisible characters, escape sequences, control
// characters) and the built-in checks for tag characters, bidi controls and
// mixed-script words read the raw text. Phrase rules read it normalized: per
// character, invisible characters are removed, Unicode tag characters become
// the ASCII they encode, everything else gets its compatibility decomposition
// (NFKD, which includes NFKC's mappings) without combining marks, letters of
// other scripts that look like Latin ones are mapped to them, and whitespace
// becomes a space (newlines stay), a run of it one character. Rules read this text in lower case
// ("on": "lower", the default) or with case kept ("on": "cased"). So
// "d<U+200B>o not tell the user" and "DO NOT TELL THE USER" match the same
// rule. Snippets always show the raw text, made visible (Visible).
//
// # Rule files
//
// rules/*.json, one file per category, each:
//
//	{"category": "concealment",
//	 "rules": [{
//	   "id": "conceal-from-user",          lower-case words joined by "-", unique
//	   "severity": "high",                 "low", "medium" or "high"
//	   "explanation": "asks the model...", one line a person understands
//	   "on": "lower",                      "lower" (default), "cased" or "raw"
//	   "in": "schema",                     optional: only strings inside inputSchema/outputSchema
//	   "except": ["instructions"],         optional: paths where the rule does not apply
//	   "keywords": ["user", "..."],        lower-case literals; the patterns run only on text
//	                                       that contains one (none: always; raw rules have none)
//	   "also": ["not", "..."],             optional, with keywords: one of these must appear too
//	   "patterns": ["(?P<s>...)"],         Go RE2; the first match of any pattern is a finding,
//	                                       its snippet the group named s, else the whole match
//	   "unless": ["..."],                  optional: a match that one of these also matches is ignored
//	   "check": "cross-tool",              instead of patterns: a built-in check (tag-chars, bidi,
//	                                       mixed-script, encoded, encoded-prose, cross-tool, cross-tool-prefer)
//	   "frame": {"sentence": [["tell", "know"], ["less"]], "text": [["outward"]], "not": ["selfdoubt"]},
//	                                       instead of patterns: a frame (below)
//	   "match": ["..."],                   examples that must produce this rule
//	   "nomatch": ["..."]                  examples that must not
//	 }]}
//
// The test suite runs every example through Text with the path "description"
// ("inputSchema.properties.x.description" for rules "in" the schema); the
// examples of the two cross-tool checks are scanned as if the list also held
// send_email, read_file, list_files, search, upload_file and
// create_conversation.
//
// Besides the rule's keywords, each pattern runs only when the text contains
// one of the literals that every match of it must contain, which the scanner
// derives from the regular expression itself (TestLiteralGateSound and
// TestLiteralGateRandom check that this never hides a match).
//
// In a text longer than 256 characters, a pattern runs only on windows around
// the occurrences of its rarest literal set, reaching as far as its longest
// possible match (an unbounded repetition of what holds no space counted as
// 32 characters; one that can hold a space, such as .*?, makes the pattern
// read the whole text), and
// only where each of its other literal sets also occurs inside the window. A
// literal set holding a single common character (space, letter, digit,
// common punctuation) is not followed by the automaton; one of punctuation
// only (":", the quotes) is looked for, byte by byte, in the text or window
// a pattern would read. Literals may hold characters of other scripts that
// the pattern matches exactly (a dash, an em dash).
//
// # Frames
//
// A frame is a rule on what a sentence is about. rules/lexicon.json maps
// categories to lower-case words and phrases ({"lexicon": {"tell": ["tell",
// "mention", "let * know", ...]}}; a * between two words stands for one to
// three words). A word also counts in its usual forms (-s, -ed or -d,
// -ing, 's; -es after s, x, z, ch, sh, o), a phrase's words are read as their base words, and a
// category named "^..." counts only for a sentence's first word ("^ROLE":
// only written in capitals). A hyphenated word the lexicon lacks counts
// in the categories of its parts that name the AI or authority (model,
// ^model, authority, ^ROLE): "model-instructions". An entry "-tail" counts
// a compound word that ends in tail after three letters or more
// ("-werkzeug": "suchwerkzeuge"); a word of one letter has no forms.
// Built in: @self (the tool's own name, also with 's), @tool
// (another snake_case name with a verb in it, called with "(", after
// "calling", or a snake_case tool of the list), @foreign (such a name that
// is not a tool of this server's own list; not a line's heading "name:"),
// @secret (an identifier ending in key, token, secret, password... with no
// verb in it), @named ("the github server", "the official GitHub
// integration", "Netlify connectors"), @unrelated. A sentence ends at ; ! ?
// a dot no word follows, or a newline that does not only wrap it. A frame fires
// on the first sentence that holds a category of each "sentence" group and
// none of "not", in a string that holds one of each "text" group anywhere
// (with "label": true, on the first fenced label instead of a sentence: one
// to six words between runs of one symbol or brackets of any script,
// "-----BEGIN ASSISTANT CONFIG-----", "⟦ priority: model ⟧");
// its snippet is that sentence, and it is not reported when a rule of the
// words already reported something in that sentence. Frames read
// definitions only (Item and Tools: tools, prompts, resources, the
// server's instructions, and text decoded from them), never results,
// errors or parameters. The test suite runs a frame's examples as the
// description of a tool named example_tool among the cross-tool examples'
// names.
//
// A rule reports at most one finding per string. Findings come ordered by
// the order their paths were first seen, then by severity, highest first.
package scan
