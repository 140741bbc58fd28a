package install

import (
	"bufio"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// npmScript runs inside the install container. The requirement comes in
// through the environment, never spliced into the script. npm's own output
// goes to stderr so that stdout carries only the report.
const npmScript = `set -e
cd "$MCPCAGE_MOUNT"
printf '{"private":true}\n' > package.json
npm install $MCPCAGE_NPM_FLAGS --omit=dev --no-audit --no-fund --no-update-notifier -- "$MCPCAGE_REQUIREMENT" >&2 || {
	code=$?
	exec node -e "$MCPCAGE_NPM_FAILED" "$code"
}
exec node -e "$MCPCAGE_NPM_REPORT"
`

// npmReport walks the installed tree: the package's version and command, and
// every package with an install script that --ignore-scripts skipped
// (including native addons, whose implicit install is node-gyp).
const npmReport = `
const fs = require('fs'), path = require('path');
const mount = process.env.MCPCAGE_MOUNT, name = process.env.MCPCAGE_NAME;
const nm = path.join(mount, 'node_modules');
const out = {name, version: '', command: [], skipped: []};
const say = () => process.stdout.write('MCPCAGE-REPORT ' + JSON.stringify(out) + '\n');
const fail = (kind, detail) => { out.failure = {kind, package: name, detail}; delete out.command; delete out.skipped; delete out.version; say(); process.exit(0); };
const read = dir => { try { return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')); } catch (e) { return null; } };
const walk = dir => {
	let ents; try { ents = fs.readdirSync(dir, {withFileTypes: true}); } catch (e) { return; }
	for (const e of ents) {
		if (!e.isDirectory() || e.name.startsWith('.')) continue;
		const p = path.join(dir, e.name);
		if (e.name.startsWith('@')) { walk(p); continue; }
		const pk = read(p);
		if (pk) {
			const s = (pk.scripts && typeof pk.scripts === 'object') ? pk.scripts : {};
			const hooks = ['preinstall', 'install', 'postinstall'].filter(h => typeof s[h] === 'string' && s[h] !== '');
			if (!hooks.length && fs.existsSync(path.join(p, 'binding.gyp'))) hooks.push('install (node-gyp)');
			if (hooks.length) out.skipped.push({name: String(pk.name || e.name), version: String(pk.version || ''), scripts: hooks});
		}
		walk(path.join(p, 'node_modules'));
	}
};
const dir = path.join(nm, name);
const pk = read(dir);
if (!pk) fail('failed', 'npm installed nothing for it');
// The resolved tree, from npm's own record of it: every package must come
// from the registry in use, under its own name, unless named in
// MCPCAGE_ALLOW_DEPS. A dependency on a tarball URL, a git repository, a
// file, or an npm alias (installed under another name) is refused by name.
let registry = String(process.env.npm_config_registry || 'https://registry.npmjs.org/');
if (!registry.endsWith('/')) registry += '/';
const allowed = new Set(String(process.env.MCPCAGE_ALLOW_DEPS || '').split(',').filter(Boolean));
let lock = null;
try { lock = JSON.parse(fs.readFileSync(path.join(nm, '.package-lock.json'), 'utf8')); } catch (e) {}
if (!lock || typeof lock.packages !== 'object' || lock.packages === null) fail('failed', 'npm left no record of the installed tree (node_modules/.package-lock.json) to check');
out.tree = [];
const foreign = [];
for (const [p, e] of Object.entries(lock.packages)) {
	if (!p || typeof e !== 'object' || e === null) continue;
	const base = p.slice(p.lastIndexOf('node_modules/') + 'node_modules/'.length);
	const real = typeof e.name === 'string' ? e.name : base;
	if (e.inBundle) continue; // inside a registry tarball: its integrity covers it
	const resolved = typeof e.resolved === 'string' ? e.resolved : '';
	out.tree.push({path: p, version: String(e.version || ''), resolved, integrity: typeof e.integrity === 'string' ? e.integrity : ''});
	if (allowed.has(base) || allowed.has(real)) continue;
	if (e.link) foreign.push(base + ' (a link to ' + (resolved || '?') + ')');
	else if (!resolved.startsWith(registry)) foreign.push(base + ' (from ' + (resolved || 'nowhere named') + ', not the registry)');
	else if (real !== base) foreign.push(base + ' (is ' + real + ', installed under another name)');
}
if (foreign.length) { out.failure = {kind: 'foreign', package: name, detail: foreign.slice(0, 5).join('; ') + (foreign.length > 5 ? '; and ' + (foreign.length - 5) + ' more' : '')}; delete out.command; delete out.skipped; delete out.version; delete out.tree; say(); process.exit(0); }
out.version = String(pk.version || '');
let bins = pk.bin;
const short = name.replace(/^@[^/]+\//, '');
if (typeof bins === 'string') bins = {[short]: bins};
// With MCPCAGE_BIN the command line names the command (npx -p PKG CMD):
// the host picks it from node_modules/.bin, so a package without a command
// of its own installs too.
const noCommand = (kind, detail) => { if (process.env.MCPCAGE_BIN) { out.command = []; if (process.env.MCPCAGE_SCAN_SCRIPTS === '1') walk(nm); say(); process.exit(0); } fail(kind, detail); };
if (!bins || typeof bins !== 'object' || !Object.keys(bins).length) noCommand('no-command', 'it declares no command ("bin") to run');
let keys = Object.keys(bins), key = keys.length === 1 ? keys[0] : (bins[short] ? short : null);
if (!key) noCommand('several-commands', 'it declares several commands: ' + keys.join(', '));
const file = path.join(dir, String(bins[key]));
if (!file.startsWith(dir + '/')) fail('no-command', 'its command points outside the package');
let head = '';
try { head = fs.readFileSync(file, 'utf8').slice(0, 200).split('\n')[0]; } catch (e) { fail('no-command', 'its command file is missing'); }
out.command = (/node/.test(head) || !head.startsWith('#!') || /\.[cm]?js$/.test(file)) ? ['node', file] : [file];
if (process.env.MCPCAGE_SCAN_SCRIPTS === '1') walk(nm);
say();
`

// npmFailed classifies npm's failure from its log for a one-line error.
const npmFailed = `
const fs = require('fs'), path = require('path');
const name = process.env.MCPCAGE_NAME;
let log = '';
try {
	const dir = path.join(process.env.npm_config_cache, '_logs');
	for (const f of fs.readdirSync(dir).sort()) log += fs.readFileSync(path.join(dir, f), 'utf8');
} catch (e) {}
let kind = 'failed', detail = 'npm install exited with status ' + process.argv[1];
if (/E404|404 Not Found/.test(log)) { kind = 'not-found'; detail = 'the registry has no such package or version'; }
else if (/ETARGET/.test(log)) { kind = 'not-found'; detail = 'no version matches'; }
else if (/ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET/.test(log)) { kind = 'unreachable'; detail = 'cannot be reached (' + log.match(/ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET/)[0] + ')'; }
else if (/CERT|certificate/i.test(log)) { detail = 'TLS certificate problem reaching the registry (set NODE_EXTRA_CA_CERTS?)'; }
process.stdout.write('MCPCAGE-REPORT ' + JSON.stringify({name, version: '', command: [], skipped: [], failure: {kind, package: name, detail}}) + '\n');
`

// npmRegistry is the registry the user's npm would use: the environment, else
// the registry= line of ~/.npmrc. Only the URL is taken: auth lines of .npmrc
// never leave it.
func npmRegistry() string {
	v := npmSetting("registry")
	if validURL(v) {
		return v
	}
	return ""
}

// npmCAFile is npm's cafile setting, as an absolute path, or "".
func npmCAFile() string {
	v := npmSetting("cafile")
	if v == "" || !filepath.IsAbs(v) {
		return ""
	}
	return v
}

// npmSetting reads one plain setting the way npm would find it for the
// user: NPM_CONFIG_<KEY> / npm_config_<key>, else ~/.npmrc. Only the named
// key is read; nothing else of .npmrc (auth tokens) is kept.
func npmSetting(key string) string {
	for _, k := range []string{"NPM_CONFIG_" + strings.ToUpper(key), "npm_config_" + key} {
		if v := strings.TrimSpace(os.Getenv(k)); v != "" {
			return v
		}
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	f, err := os.Open(filepath.Join(h, ".npmrc"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && strings.TrimSpace(k) == key {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return ""
}

func validURL(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t\r\n\x00") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// redactURL hides credentials in a URL before it is printed.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	hadUser := u.User != nil
	u.User = nil
	u.RawQuery, u.Fragment = "", ""
	s = u.String()
	if hadUser {
		s = strings.Replace(s, "://", "://***@", 1)
	}
	return s
}
