#!/usr/bin/env bash
# Render the collection's plugin documentation into docs/modules/ with antsibull-docs (offline),
# and lint it.
#
# Usage: scripts/build_docs.sh [--check] [--ref GIT_REF] [--dest DIR]
#   (no option)   render from the working tree into docs/modules/ (replacing what is there),
#                 then lint the plugin docs
#   --check       render into a temporary folder and compare with docs/modules/ instead of
#                 writing it (scripts/check_release.sh runs this)
#   --ref REF     render the plugins of a commit (e.g. a release tag) instead of the working tree
#   --dest DIR    write into DIR instead of docs/modules/
#
# How: the collection's galaxy.yml, meta/ and plugins/ are copied into a temporary
# ansible_collections/volfence/csi tree (antsibull-docs documents installed collections, and a
# copy keeps .venv and the labs out of its way); then, with that tree as the only collections
# path besides the `ansible` package's (kubernetes.core, ansible.builtin):
#   antsibull-docs collection --use-current --squash-hierarchy --output-format simplified-rst
#       --fail-on-error --no-add-antsibull-docs-version --cleanup everything volfence.csi
#   antsibull-docs lint-collection-docs --plugin-docs <tree>
# "simplified-rst" is standalone reStructuredText (one <name>_<type>.rst per plugin, e.g.
# rbd_watchers_info_module.rst, and an index.rst) that reads without Sphinx. No version stamp is written, so the output only changes
# when the documentation does.
#
# Exit status: 0 rendered and clean (with --check: and docs/modules/ is up to date);
#              1 rendering failed (a schema or parsing error in a DOCUMENTATION/EXAMPLES/RETURN);
#              3 rendered, but the docs linter found problems (wrong O()/RV() references, bad
#                markup), or with --check docs/modules/ differs from the rendering;
#              2 usage error or missing tools.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VOLFENCE_VENV:-$REPO/.venv}"
NAMESPACE=volfence
NAME=csi

check=0
ref=""
dest="$REPO/docs/modules"
while [ $# -gt 0 ]; do
    case "$1" in
        --check) check=1 ;;
        --ref) ref="${2:?--ref needs a git ref}"; shift ;;
        --dest) dest="${2:?--dest needs a folder}"; shift ;;
        -h|--help) sed -n '2,28p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "build_docs.sh: unknown option: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

ANTSIBULL_DOCS="$VENV/bin/antsibull-docs"
[ -x "$ANTSIBULL_DOCS" ] || { echo "build_docs.sh: $ANTSIBULL_DOCS not found: run scripts/setup.sh" >&2; exit 2; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/volfence-docs.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
TREE="$TMP/collections/ansible_collections/$NAMESPACE/$NAME"
mkdir -p "$TREE"

if [ -n "$ref" ]; then
    git -C "$REPO" archive --format=tar "$ref" galaxy.yml meta plugins | tar -x -C "$TREE"
else
    cp -R "$REPO/galaxy.yml" "$REPO/meta" "$REPO/plugins" "$TREE/"
    find "$TREE" -name __pycache__ -prune -exec rm -rf {} +
fi

# Only this tree and the `ansible` package's collections; no ansible.cfg from the checkout (its
# collections_path would bring the checkout itself back in).
printf '[defaults]\n' >"$TMP/ansible.cfg"
export ANSIBLE_CONFIG="$TMP/ansible.cfg"
export ANSIBLE_COLLECTIONS_PATH="$TMP/collections"
export ANSIBLE_NOCOLOR=1
export PATH="$VENV/bin:$PATH"
# The linter copies each collection it lints with `git ls-files` when `git` says the collection
# sits inside a work tree: kubernetes.core taken from .venv (inside this checkout, ignored by git)
# is then copied empty and its doc fragments are "unknown" (CI saw this). Git may not look above
# these folders, so every copy is a plain one.
GIT_CEILING_DIRECTORIES="$(dirname "$TMP"):$VENV"
export GIT_CEILING_DIRECTORIES
cd "$TMP"

# The collections galaxy.yml depends on (kubernetes.core: doc fragments), copied beside it from where
# ansible finds them (the `ansible` package). A copy, because antsibull-docs' linter copies a
# dependency with `git ls-files` when it sits inside a git work tree, as .venv does inside this
# checkout: it would copy nothing of it.
"$VENV/bin/python" - "$TREE/galaxy.yml" "$TMP/collections" <<'PYEOF' || { echo "build_docs.sh: could not copy the dependencies" >&2; exit 2; }
import json, os, shutil, subprocess, sys
import yaml
galaxy, dest = sys.argv[1], sys.argv[2]
deps = sorted((yaml.safe_load(open(galaxy)) or {}).get('dependencies') or {})
if deps:
    out = subprocess.run(['ansible-galaxy', 'collection', 'list', '--format', 'json'],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True).stdout
    listed = json.loads(out[out.index('{'):]) if '{' in out else {}
    for dep in deps:
        where = [path for path, cols in listed.items() if dep in cols and not path.startswith(dest)]
        if not where:
            sys.exit('build_docs.sh: dependency %s not installed (the `ansible` package brings it)' % dep)
        namespace, name = dep.split('.')
        target = os.path.join(dest, 'ansible_collections', namespace, name)
        if not os.path.exists(target):
            shutil.copytree(os.path.join(where[0], namespace, name), target,
                            ignore=shutil.ignore_patterns('__pycache__', 'tests'))
PYEOF

out="$TMP/rendered"
mkdir -p "$out"
if ! "$ANTSIBULL_DOCS" collection --use-current --squash-hierarchy --fail-on-error \
        --output-format simplified-rst --no-add-antsibull-docs-version --cleanup everything \
        --dest-dir "$out" "$NAMESPACE.$NAME" >"$TMP/render.log" 2>&1; then
    echo "build_docs.sh: FAILED: antsibull-docs could not render the plugin docs:" >&2
    cat "$TMP/render.log" >&2
    exit 1
fi

status=0
if ! "$ANTSIBULL_DOCS" lint-collection-docs --plugin-docs "$TREE" >"$TMP/lint.log" 2>&1; then
    echo "build_docs.sh: the docs linter found problems (antsibull-docs lint-collection-docs):" >&2
    sed "s|$TREE/||" "$TMP/lint.log" >&2
    if grep -q "unknown doc_fragment" "$TMP/lint.log"; then
        # Not a docs problem but the linter's view of the dependencies: say what it saw.
        echo "build_docs.sh: the linter did not find a dependency; the collections it was offered" \
             "(ansible-galaxy collection list):" >&2
        ansible-galaxy collection list 2>&1 | sed 's/^/  /' >&2
    fi
    status=3
fi

count="$(find "$out" -name '*_*.rst' | wc -l)"
if [ "$check" = 1 ]; then
    if [ ! -d "$dest" ]; then
        echo "build_docs.sh: $dest does not exist: run scripts/build_docs.sh" >&2
        exit 3
    fi
    if ! diff -r -q "$out" "$dest" >"$TMP/diff.log" 2>&1; then
        echo "build_docs.sh: ${dest#"$REPO"/} is out of date with the plugins' documentation" \
             "(run scripts/build_docs.sh and commit the result):" >&2
        sed -e "s|$out|rendered|g" -e "s|$REPO/||g" "$TMP/diff.log" >&2
        exit 3
    fi
    echo "build_docs.sh: ${dest#"$REPO"/} is up to date ($count plugin pages)"
else
    mkdir -p "$dest"
    # Replace the folder's content: docs of removed plugins go too.
    find "$dest" -mindepth 1 -maxdepth 1 -name '*.rst' -delete
    cp "$out"/*.rst "$dest/"
    echo "build_docs.sh: rendered $count plugin pages into ${dest#"$REPO"/}"
fi
exit "$status"
