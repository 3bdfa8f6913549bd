#!/bin/sh
# A CI job's OAuth client for a preview deployment, through Latchkey's management API.
#
#   provision.sh up PREVIEW_ID REDIRECT_URI   registers the client PREVIEW_ID (or, when it exists,
#                                             sets its redirect URI and grant with If-Match) and
#                                             prints client_id=… and, when it is new, client_secret=…
#   provision.sh down PREVIEW_ID              removes it when the preview is torn down
#
# Environment (from the CI's secret store; nothing secret goes on a command line, where other users
# of the machine could read it in the process list):
#   LATCHKEY_ISSUER         the server, e.g. https://id.example.com
#   PROVISIONER_ID          the CI job's machine client, granted read:clients and write:clients on
#   PROVISIONER_SECRET        {issuer}/api/v1 (latchkey clients grant ID ISSUER/api/v1 --scope …)
#   PREVIEW_API             optional: an API the preview calls, e.g. https://api.example.com
#   PREVIEW_SCOPES          optional: its scopes to grant the preview, space separated
#
# Needs only sh, curl, sed and base64. Exit 0 on success, 1 when the server refuses (its problem
# detail on stderr), 2 on bad usage.
set -eu

usage() {
  echo "usage: $0 up PREVIEW_ID REDIRECT_URI | $0 down PREVIEW_ID" >&2
  exit 2
}
fail() {
  echo "provision.sh: $*" >&2
  exit 1
}

: "${LATCHKEY_ISSUER:?set LATCHKEY_ISSUER}" "${PROVISIONER_ID:?set PROVISIONER_ID}" "${PROVISIONER_SECRET:?set PROVISIONER_SECRET}"
issuer=${LATCHKEY_ISSUER%/}
api="$issuer/api/v1"
action=${1:-}
preview=${2:-}
case "$action:$#" in up:3 | down:2) ;; *) usage ;; esac
# The values go into JSON and a URL path as they are: allow only what needs no escaping.
case "$preview" in '' | *[!A-Za-z0-9._-]*) fail "PREVIEW_ID may hold letters, digits, '.', '_' and '-' only" ;; esac

# Secrets (the Basic credentials, the access token) travel in header files only this user can read.
umask 077
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One call: status to stdout; answer body in $work/body, answer headers in $work/headers.
call() {
  method=$1 path=$2
  shift 2
  curl -sS -X "$method" -H @"$work/auth" -D "$work/headers" -o "$work/body" -w '%{http_code}' "$@" "$api$path"
}
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" "$work/body"; }
# A refusal is an RFC 9457 problem: shown as the server wrote it (its detail says what to fix).
refused() { fail "$1 answered $2: $(cat "$work/body")"; }

# An access token for the management API (client_credentials, RFC 6749 §4.4; resource, RFC 8707).
printf 'Authorization: Basic %s\n' "$(printf '%s:%s' "$PROVISIONER_ID" "$PROVISIONER_SECRET" | base64 | tr -d '\n')" >"$work/auth"
status=$(curl -sS -H @"$work/auth" -o "$work/body" -w '%{http_code}' \
  --data-urlencode grant_type=client_credentials --data-urlencode "resource=$api" --data-urlencode 'scope=read:clients write:clients' \
  "$issuer/oauth/token")
[ "$status" = 200 ] || fail "the token request answered $status: $(sed -n 's/.*"error_description":"\([^"]*\)".*/\1/p' "$work/body")"
printf 'Authorization: Bearer %s\n' "$(field access_token)" >"$work/auth"

# The ETag of the client as last read (RFC 9110 §8.8.3), sent back as If-Match.
etag() { sed -n 's/^[Ee][Tt][Aa][Gg]: *\(.*\)\r$/\1/p' "$work/headers"; }

if [ "$action" = down ]; then
  status=$(call GET "/clients/$preview")
  [ "$status" = 404 ] && {
    echo "client $preview is already removed" >&2
    exit 0
  }
  [ "$status" = 200 ] || refused "GET /clients/$preview" "$status"
  status=$(call DELETE "/clients/$preview" -H "If-Match: $(etag)")
  [ "$status" = 204 ] || refused "DELETE /clients/$preview" "$status"
  echo "removed client $preview" >&2
  exit 0
fi

redirect_uri=$3
case "$redirect_uri" in https://* | http://localhost[:/]* | http://127.0.0.1[:/]*) ;; *) fail 'REDIRECT_URI must be https (or http to localhost)' ;; esac
case "$redirect_uri" in *[\"\\\ ]*) fail 'REDIRECT_URI may not hold quotes, backslashes or spaces' ;; esac
grants='[]'
if [ -n "${PREVIEW_API:-}" ]; then
  case "$PREVIEW_API" in *[\"\\]*) fail 'PREVIEW_API may not hold quotes or backslashes' ;; esac
  scopes=''
  for scope in ${PREVIEW_SCOPES:-}; do
    case "$scope" in *[\"\\]*) fail "bad scope $scope" ;; esac
    scopes="$scopes${scopes:+,}\"$scope\""
  done
  grants="[{\"api\":\"$PREVIEW_API\",\"scopes\":[$scopes]}]"
fi

status=$(call GET "/clients/$preview")
if [ "$status" = 404 ]; then
  # A new confidential client: its secret is in this answer only, printed here once.
  status=$(call POST /clients -H 'Content-Type: application/json' --data-binary @- <<EOF
{"client_id":"$preview","name":"Preview $preview","confidential":true,"redirect_uris":["$redirect_uri"],"grants":$grants}
EOF
  )
  [ "$status" = 201 ] || refused 'POST /clients' "$status"
  echo "client_id=$preview"
  echo "client_secret=$(field client_secret)"
  exit 0
fi
[ "$status" = 200 ] || refused "GET /clients/$preview" "$status"
# It exists (a re-run of the job): set its redirect URI and grant, unless someone changed it since
# it was read (412), in which case read it again and retry.
for attempt in 1 2 3; do
  status=$(call PATCH "/clients/$preview" -H "If-Match: $(etag)" -H 'Content-Type: application/json' --data-binary @- <<EOF
{"redirect_uris":["$redirect_uri"],"grants":$grants}
EOF
  )
  case "$status" in
    200)
      echo "client_id=$preview"
      echo "client $preview updated; its secret is unchanged and is not shown again" >&2
      exit 0
      ;;
    412) [ "$(call GET "/clients/$preview")" = 200 ] || fail "client $preview went away meanwhile" ;;
    *) refused "PATCH /clients/$preview" "$status" ;;
  esac
done
fail "client $preview kept changing (attempt $attempt): try again"
