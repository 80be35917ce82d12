#!/usr/bin/env bash
# CPU seconds of one jffs2-mkfs build per thread kind (reader, compressors, main = scan +
# plan + layout, writer) and the speed-up they allow on more cores than this machine has.
#
#   bench/mkfs-threads.sh [TREE] [THREADS]      (defaults: /usr/bin, nproc)
#
# `bench/threads.sh mkfs`, which describes the measurement and the bounds, and does the same
# for the other tools.
exec "$(dirname "$0")/threads.sh" mkfs "$@"
