#!/bin/sh
# indexer-hook: keeps the code index fresh. Installed by `indexer hooks install`, removed by
# `indexer hooks uninstall` (which puts back any hook it chained).
# It runs the hook that was here before (if any), then starts a detached background update and
# returns at once: it never waits for indexing and never changes git's outcome. When the update
# cannot even start (the Python below was moved or deleted, indexer was uninstalled from it),
# it records why in the index's last_failure.json, which `indexer status` shows.
python=__PYTHON__

record_failure() {
    git_dir=$(git rev-parse --absolute-git-dir 2>/dev/null) || return 0
    index_dir="${INDEXER_HOME:-$git_dir/indexer}"
    mkdir -p "$index_dir" 2>/dev/null || return 0
    printf '{"time": "%s", "error": %s}\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$1" \
        > "$index_dir/last_failure.json" 2>/dev/null
    return 0
}

if [ "${1:-}" = "--indexer-background" ]; then
    "$python" -m indexer update --quiet >/dev/null 2>&1 </dev/null || record_failure __NO_MODULE__
    exit 0
fi

hook_name=$(basename "$0")
hook_dir=$(dirname "$0")
status=0
if [ -x "$hook_dir/$hook_name.indexer-chained" ]; then
    "$hook_dir/$hook_name.indexer-chained" "$@"
    status=$?
fi
if [ -z "${INDEXER_HOOKS_DISABLED:-}" ]; then
    if [ ! -x "$python" ]; then
        record_failure __NO_PYTHON__
    elif command -v setsid >/dev/null 2>&1; then
        setsid "$0" --indexer-background >/dev/null 2>&1 </dev/null &
    else
        ("$0" --indexer-background >/dev/null 2>&1 </dev/null &)
    fi
fi
exit $status
