#!/bin/sh
# indexer-hook: keeps the code index fresh. Installed by `indexer hooks install`, removed by
# `indexer hooks uninstall` (which puts back any hook it chained).
# It runs the hook that was here before (if any), then starts a detached background update and
# returns at once: it never waits for indexing and never changes git's outcome.
hook_name=$(basename "$0")
hook_dir=$(dirname "$0")
status=0
if [ -x "$hook_dir/$hook_name.indexer-chained" ]; then
    "$hook_dir/$hook_name.indexer-chained" "$@"
    status=$?
fi
if [ -z "${INDEXER_HOOKS_DISABLED:-}" ]; then
    if command -v setsid >/dev/null 2>&1; then
        setsid __PYTHON__ -m indexer update --quiet >/dev/null 2>&1 </dev/null &
    else
        (__PYTHON__ -m indexer update --quiet >/dev/null 2>&1 </dev/null &)
    fi
fi
exit $status
