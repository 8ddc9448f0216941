#!/usr/bin/env bash
# Debian's Chromium for the browser test (test/auth/oauth-browser.e2e.test.ts drives /usr/bin/chromium
# through playwright-core; Playwright's own browser download cannot be reached from CI).
#
#   scripts/ci/chromium.sh    install `chromium` with apt-get unless /usr/bin/chromium exists
#
set -euo pipefail
exec bash "$(dirname "$0")/apt-install.sh" chromium /usr/bin/chromium
