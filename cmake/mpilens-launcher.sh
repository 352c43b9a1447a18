#!/bin/sh
# P/bin/mpilens: the mpilens command, run by the Python environment of its prefix,
# P/lib/mpilens/venv (made by `make install`, or by hand: docs/install.md).
# Relocatable: the prefix is found from where this script lies (symbolic links to it
# resolved), so the whole prefix can be moved or copied.
self=$(readlink -f -- "$0" 2>/dev/null) || self=$0
prefix=$(dirname -- "$(dirname -- "$self")")
py="$prefix/lib/mpilens/venv/bin/python"
if [ ! -x "$py" ]; then
    echo "mpilens: $py not found: make the command's environment with" \
         "python3 -m venv $prefix/lib/mpilens/venv &&" \
         "$prefix/lib/mpilens/venv/bin/pip install <mpilens checkout> (docs/install.md)" >&2
    exit 2
fi
# tells the command which prefix it runs from (mpilens/paths.py: the runtime lookup)
_MPILENS_LAUNCHER=$self
export _MPILENS_LAUNCHER
exec "$py" -m mpilens.cli "$@"
