#!/usr/bin/env bash
# Regenerate test/fixtures/pi/*/expected/ with the Pi coding agent itself.
# Developers run this ad hoc (`npm run goldens`); CI never does.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/.."
exec npx -y -p @mariozechner/pi-coding-agent@0.73.1 -c 'node scripts/pi-goldens.mjs'
