#!/usr/bin/env bash
# tmux for the CLI's terminal test (test/cli/chat-tmux.e2e.test.ts drives `persona chat` in a tmux
# session with send-keys/capture-pane; without tmux that test is skipped).
#
#   scripts/ci/tmux.sh    install `tmux` with apt-get unless it is already on PATH
#
set -euo pipefail
exec bash "$(dirname "$0")/apt-install.sh" tmux tmux
