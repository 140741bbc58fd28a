package install

import (
	"os"
	"strings"
)

// pipDriver runs inside the Python install container (python3 -c). It makes
// a virtual environment inside the package mount (a venv on Docker's noexec
// tmpfs would not run) and installs wheels only: with uv when the image has
// it, else with pip --only-binary=:all:. Neither builds anything, so no code
// of the package runs at install time. On failure it asks the index what the
// failing package offers, to tell "installs only from source" from "not
// found". The requirement and index settings come from the environment.
const pipDriver = `
import json, os, re, shutil, subprocess, sys, urllib.request, urllib.error, html.parser

mount = os.environ['MCPCAGE_MOUNT']
name = os.environ['MCPCAGE_NAME']
req = os.environ['MCPCAGE_REQUIREMENT']
venv = os.path.join(mount, 'venv')
vpy = os.path.join(venv, 'bin', 'python')

def norm(n):
    return re.sub(r'[-_.]+', '-', n).lower()

def say(out):
    sys.stdout.write('MCPCAGE-REPORT ' + json.dumps(out) + '\n')
    sys.stdout.flush()
    sys.exit(0)

def fail(kind, pkg, detail):
    say({'name': name, 'version': '', 'command': [], 'skipped': [], 'failure': {'kind': kind, 'package': pkg, 'detail': detail}})

def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stderr.write(p.stdout)
    return p.returncode, p.stdout

uv = shutil.which('uv')
if uv:
    env_index = os.environ.get('UV_INDEX_URL') or os.environ.get('UV_DEFAULT_INDEX') or os.environ.get('PIP_INDEX_URL')
    if env_index:
        os.environ.setdefault('UV_DEFAULT_INDEX', env_index)
    code, log = run([uv, 'venv', '--quiet', '--python', sys.executable, venv])
    if code == 0:
        code, log = run([uv, 'pip', 'install', '--python', vpy, '--no-build', '--only-binary', ':all:', '--', req])
else:
    for u, p in (('UV_INDEX_URL', 'PIP_INDEX_URL'), ('UV_DEFAULT_INDEX', 'PIP_INDEX_URL'), ('UV_EXTRA_INDEX_URL', 'PIP_EXTRA_INDEX_URL')):
        if os.environ.get(u) and not os.environ.get(p):
            os.environ[p] = os.environ[u]
    # The image's own pip installs into the venv (pip --python), so the venv
    # needs no pip of its own: ensurepip would cost seconds per install.
    code, log = run([sys.executable, '-m', 'venv', '--without-pip', venv])
    if code == 0:
        code, log = run([sys.executable, '-m', 'pip', '--python', vpy, 'install', '--no-cache-dir',
                         '--disable-pip-version-check', '--no-input', '--only-binary=:all:', '--', req])

def index_files(pkg):
    """File names the index offers for pkg, or None when it has no such project."""
    indexes = [os.environ.get('PIP_INDEX_URL') or os.environ.get('UV_DEFAULT_INDEX') or os.environ.get('UV_INDEX_URL') or 'https://pypi.org/simple']
    indexes += (os.environ.get('PIP_EXTRA_INDEX_URL') or os.environ.get('UV_EXTRA_INDEX_URL') or '').split()
    files, seen = [], False
    class P(html.parser.HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag == 'a':
                for k, v in attrs:
                    if k == 'href' and v:
                        files.append(v.split('#')[0].split('?')[0].rsplit('/', 1)[-1])
    import base64, ssl, urllib.parse
    ca = os.environ.get('PIP_CERT') or os.environ.get('SSL_CERT_FILE')
    ctx = ssl.create_default_context(cafile=ca) if ca else None
    for ix in indexes:
        u = urllib.parse.urlsplit(ix.rstrip('/') + '/' + norm(pkg) + '/')
        headers = {}
        if u.username is not None:
            # Credentials in the index URL, as pip takes them.
            cred = urllib.parse.unquote(u.username) + ':' + urllib.parse.unquote(u.password or '')
            headers['Authorization'] = 'Basic ' + base64.b64encode(cred.encode()).decode()
            u = u._replace(netloc=u.hostname + (':%d' % u.port if u.port else ''))
        try:
            rq = urllib.request.Request(urllib.parse.urlunsplit(u), headers=headers)
            with urllib.request.urlopen(rq, timeout=30, context=ctx) as r:
                P().feed(r.read(20 << 20).decode('utf-8', 'replace'))
                seen = True
        except urllib.error.HTTPError as e:
            if e.code not in (404, 410):
                fail('unreachable', norm(pkg), 'the package index %s answered HTTP %d' % (u.hostname, e.code))
        except Exception as e:
            # Not "no such package": the index could not be asked.
            why = getattr(e, 'reason', None) or e
            fail('unreachable', norm(pkg), 'the package index %s cannot be reached (%s)' % (u.hostname, str(why)[:120]))
    return files if seen else None

def compatible(wheel):
    try:
        from pip._vendor.packaging.tags import sys_tags
        from pip._vendor.packaging.utils import parse_wheel_filename
    except Exception:
        return True
    try:
        tags = parse_wheel_filename(wheel)[3]
    except Exception:
        return False
    mine = set(sys_tags())
    return any(t in mine for t in tags)

if code != 0:
    # The requirement pip or uv could not satisfy: the package or a dependency.
    m = re.search(r'(?:satisfies the requirement|matching distribution found for|Because) ([A-Za-z0-9][A-Za-z0-9._-]*)', log)
    bad = m.group(1) if m else name
    files = index_files(bad)
    if files is None:
        fail('not-found', norm(bad), 'the package index has no such project')
    wheels = [f for f in files if f.endswith('.whl')]
    sdists = [f for f in files if f.endswith(('.tar.gz', '.zip', '.tar.bz2', '.tgz'))]
    if sdists and not any(compatible(w) for w in wheels):
        fail('source-only', norm(bad), 'no wheel for this platform')
    if not files:
        fail('not-found', norm(bad), 'the package index lists no files for it')
    last = [l for l in log.strip().splitlines() if l.strip()][-1:] or ['']
    fail('failed', norm(bad), last[0][:300])

`

// pipReport is appended to pipDriver: it reads what was installed. It runs
// the venv's interpreter on metadata only; no module of the package is
// imported.
const pipReport = `
p = subprocess.run([vpy, '-c', '''
import importlib.metadata as md, json, re, sys
want = sys.argv[1]
for d in md.distributions():
    if re.sub(r'[-_.]+', '-', (d.metadata['Name'] or '')).lower() == want:
        eps = sorted(e.name for e in d.entry_points if e.group == 'console_scripts')
        print(json.dumps({'version': d.version, 'scripts': eps}))
        break
''', name], stdout=subprocess.PIPE, text=True)
try:
    info = json.loads(p.stdout)
except Exception:
    fail('failed', name, 'installed, but its metadata cannot be read')
scripts = info['scripts']
pick = scripts[0] if len(scripts) == 1 else next((s for s in scripts if norm(s) == name), None)
if pick is None and os.environ.get('MCPCAGE_BIN'):
    # uvx --from PKG CMD: the host picks CMD from the venv's bin folder, so
    # a package without a single command of its own installs too.
    say({'name': name, 'version': info['version'], 'command': [], 'skipped': []})
if not scripts:
    fail('no-command', name, 'it declares no command (console_scripts entry point) to run')
pick = scripts[0] if len(scripts) == 1 else next((s for s in scripts if norm(s) == name), None)
if pick is None:
    fail('several-commands', name, 'it declares several commands: ' + ', '.join(scripts))
say({'name': name, 'version': info['version'], 'command': [os.path.join(venv, 'bin', pick)], 'skipped': []})
`

// pipEnv is the user's index and certificate settings that reach the
// install container (values go to its environment, never to any argv).
func pipEnv() []string {
	var env []string
	for _, k := range []string{
		"PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_TRUSTED_HOST",
		"UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_INDEX", "UV_FIND_LINKS",
		"UV_INSECURE_HOST",
	} {
		v := os.Getenv(k)
		if k == "PIP_FIND_LINKS" || k == "UV_FIND_LINKS" {
			v = urlsOnly(v)
		}
		if v != "" && !strings.ContainsAny(v, "\x00") {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// urlsOnly keeps the URLs of a find-links list: a local directory is not
// visible in the install container, which mounts nothing of the host.
func urlsOnly(list string) string {
	var keep []string
	for _, f := range strings.Fields(list) {
		if validURL(f) {
			keep = append(keep, f)
		}
	}
	return strings.Join(keep, " ")
}
