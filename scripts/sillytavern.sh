#!/usr/bin/env bash
# SillyTavern against this service, for a maintainer with a SillyTavern checkout (tested with 1.12.6):
#
#   scripts/sillytavern.sh [path/to/SillyTavern]
#
# Starts the service (`npm start`, on an in-memory embedded database unless EMBEDDED_DB_IN_MEMORY or
# DATABASE_URL say otherwise; the model is the offline one unless OPENAI_BASE_URL and OPENAI_API_KEY
# name a real one), registers a user with a persona and a `chat` API key, and prints what to enter
# under API Connections > Chat Completion > Custom (OpenAI-compatible). Given a SillyTavern checkout
# whose data/default-user/settings.json exists (SillyTavern writes it on its first start), it writes
# the connection into that file and the key into secrets.json instead; stop SillyTavern first, it
# rewrites settings.json when it saves. The service runs until Ctrl-C.
#
# PORT (default 3000) is the service's port; PERSONA_URL uses a service that is already running
# instead of starting one; PERSONA_NAME and PERSONA_HANDLE name the persona (Captain Nova, nova).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$root/node_modules/.bin:$PATH"
st_dir=${1:-}
if [ -n "$st_dir" ] && [ ! -f "$st_dir/server.js" ]; then
  echo "sillytavern: $st_dir is not a SillyTavern checkout (no server.js)" >&2
  exit 2
fi

server=""
url=${PERSONA_URL:-}
if [ -z "$url" ]; then
  port=${PORT:-3000}
  url="http://127.0.0.1:$port"
  log=$(mktemp)
  # In a process group of its own (set -m), so that stopping the group stops npm and the node
  # process it starts, which a signal to npm alone would leave running.
  set -m
  (cd "$root" && PORT=$port EMBEDDED_DB_IN_MEMORY=${EMBEDDED_DB_IN_MEMORY:-true} exec npm start --silent >"$log" 2>&1) &
  server=$!
  set +m
  trap 'kill -TERM -- "-$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -f "$log"' EXIT
  trap 'exit 130' INT TERM
  echo "sillytavern: starting the service on $url (its log: $log)"
  for _ in $(seq 1 120); do
    if ! kill -0 "$server" 2>/dev/null; then
      echo "sillytavern: the service stopped:" >&2
      cat "$log" >&2
      exit 1
    fi
    if node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$url/readyz"; then break; fi
    sleep 0.5
  done
fi

node --input-type=module - "$url" "$st_dir" <<'NODE'
import { randomBytes } from "node:crypto";
import { copyFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [url, stDir] = process.argv.slice(2);
const call = async (method, path, body, token) => {
  const response = await fetch(url + path, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
};

const suffix = randomBytes(3).toString("hex");
const user = await call("POST", "/v1/auth/register", {
  email: `sillytavern-${suffix}@example.com`,
  username: `sillytavern_${suffix}`,
  password: `St-${randomBytes(12).toString("hex")}`,
});
const handle = process.env.PERSONA_HANDLE || "nova";
const persona = await call("POST", "/v1/personas", {
  name: process.env.PERSONA_NAME || "Captain Nova",
  handle,
  instructions: "You are Captain Nova, a retired starship captain who teaches cadets to read the night sky.",
  greeting_message: "Welcome aboard, cadet!",
}, user.access_token);
const { key } = await call("POST", "/v1/api-keys", { name: "SillyTavern", scopes: ["chat"] }, user.access_token);
const apiUrl = `${url}/openai/v1`;

console.log(`
In SillyTavern: API Connections > API: Chat Completion > Chat Completion Source: Custom (OpenAI-compatible)
  Custom Endpoint (Base URL): ${apiUrl}
  Custom API Key:             ${key}
  Enter a Model ID:           ${persona.handle ?? handle}   (Connect lists the user's personas by handle)`);

if (stDir) {
  const data = join(stDir, "data", "default-user");
  const settingsFile = join(data, "settings.json");
  if (!existsSync(settingsFile)) {
    console.log(`\n${settingsFile} does not exist yet: start SillyTavern once, stop it, and run this again (or enter the settings above by hand).`);
  } else {
    copyFileSync(settingsFile, `${settingsFile}.before-persona`);
    const settings = JSON.parse(readFileSync(settingsFile, "utf8"));
    settings.main_api = "openai";
    settings.oai_settings = { ...settings.oai_settings, chat_completion_source: "custom", custom_url: apiUrl, custom_model: persona.handle ?? handle };
    writeFileSync(settingsFile, JSON.stringify(settings, null, 4));
    const secretsFile = join(data, "secrets.json");
    const secrets = existsSync(secretsFile) ? JSON.parse(readFileSync(secretsFile, "utf8")) : {};
    writeFileSync(secretsFile, JSON.stringify({ ...secrets, api_key_custom: key }, null, 4));
    console.log(`\nWrote them into ${settingsFile} (the old one is settings.json.before-persona) and the key into ${secretsFile}.`);
    console.log(`Start SillyTavern (cd ${stDir} && ./start.sh), open a character and chat.`);
  }
}
NODE

if [ -n "$server" ]; then
  echo
  echo "sillytavern: the service runs on $url until Ctrl-C."
  wait "$server"
fi
