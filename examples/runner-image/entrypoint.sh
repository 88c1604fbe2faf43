#!/usr/bin/env bash
# Entrypoint of the example runner images for garm-provider-edge-connect.
#
# The provider starts one container per GARM instance and passes everything this
# script needs as environment variables (see docs/runner-contract.md). The script
# bootstraps exactly one ephemeral runner the way GARM expects it:
#
#   POST <callback>/status installing
#   GitHub JIT:      GET <metadata>/credentials/{runner,credentials,credentials_rsaparams}
#   otherwise:       GET <metadata>/runner-registration-token, then register the runner
#   POST <callback>/system-info and <callback>/status idle (with the forge's runner id)
#   unset the GARM secrets, run the runner for one job, then stay up, idle and
#   quiet, until the instance is deleted (see "After the bootstrap" below)
#
# Forgejo and Gitea endpoints both arrive as FORGE_TYPE=gitea. Which runner CLI
# is installed is found out by asking it (`register --help`, `one-job --help`,
# `daemon --help`):
#   forgejo-runner >= 12.8: register --no-interactive --ephemeral, then one-job --wait
#   Gitea's runner (act_runner >= 0.2.12, gitea-runner): register --ephemeral
#                  (--token-file where it exists), then daemon --once
#
# Any failure before the runner starts is reported as status "failed" with one
# line saying what to fix, and the script exits non-zero. A container that
# starts again after its runner was registered (a restart) says so in one line
# and stays up without doing anything. It needs bash, curl,
# jq and coreutils (and tar, only to unpack a downloaded GitHub runner).
#
# Knobs that are not part of the provider contract (defaults in brackets):
#   RUNNER_HOME                  runner directory; .runner is written here [/home/runner]
#   RUNNER_BIN                   Forgejo/Gitea runner binary [forgejo-runner, gitea-runner
#                                or act_runner from PATH]
#   RUNNER_FLAVOR                forgejo or gitea: which CLI RUNNER_BIN speaks [probed]
#   ENTRYPOINT_RETRIES           attempts per HTTP call / registration, 1-20 [5]
#   ENTRYPOINT_RETRY_DELAY       first back-off in seconds, doubled per retry,
#                                0-3600 [2]
#   ENTRYPOINT_REGISTER_TIMEOUT  seconds registration may take in all, retries
#                                included, 1-86400 [180]
#   ENTRYPOINT_SYSTEM_CA_DIR     where GARM_CA_BUNDLE is added to the system store
#                                when writable [/usr/local/share/ca-certificates]
#   ENTRYPOINT_SYSTEM_CA_BUNDLE  system bundle merged with GARM_CA_BUNDLE
#                                [/etc/ssl/certs/ca-certificates.crt]
#   ENTRYPOINT_OS_RELEASE        os-release file used for system-info [/etc/os-release]
#   ENTRYPOINT_DOCKER_TIMEOUT    seconds to wait for the Docker daemon when
#                                RUNNER_DOCKER=dind, 1-86400 [300]
#
# Docker (RUNNER_DOCKER, docs/runner-contract.md "What the example image does
# with Docker"): absent or "none" changes nothing. "dind": wait for the daemon
# at DOCKER_HOST before registering; Forgejo/Gitea labels become
# NAME:docker://IMAGE and the runner gets a config naming the daemon. "buildkit":
# host labels as for none, plus a default `docker buildx` builder on BUILDKIT_HOST.
#
# The site's actions cache (RUNNER_CACHE_SERVER, RUNNER_CACHE_SECRET; docs/runner-contract.md
# "The site's actions cache"): forgejo-runner on dind with Docker labels only gets
# it in its config; every other runner keeps its own cache and says why.

# xtrace would print the instance token; refuse it even under `bash -x`.
set +x
set -euo pipefail

readonly SELF=garm-entrypoint
# This file, for the exec into its second half (the bootstrap changes directory).
SCRIPT=${BASH_SOURCE[0]}
[[ $SCRIPT == /* ]] || SCRIPT=$PWD/$SCRIPT
readonly SCRIPT

log() { printf '%s: %s\n' "$SELF" "$*" >&2; }

# --- after the bootstrap ---------------------------------------------------------
# Edge Connect restarts a container that exits, whatever its exit code: docker
# deployments run it with --restart=unless-stopped, kubernetes deployments as a
# Deployment, whose pods always restart (docs/edge-connect-behaviours.md B13;
# edgexr/edge-cloud-platform pkg/dockermgmt/dockerapp.go:436,
# pkg/deploygen/kube.go:264-269). A runner container is good for one job, so
# after it the container never exits on its own: it stays up, printing nothing,
# until GARM deletes the instance.

# stay_up: never returns. A stop request (docker stop, pod deletion) ends it
# with exit code 0 at once; PID 1 ignores the signals it has no handler for.
# The trap ends every background job, not a pid remembered from $!: bash runs
# a trap between two commands, so a stop request arriving while `sleep &`
# starts runs it before `$!` is stored, and the new sleep would outlive us.
stay_up() {
	trap 'end_jobs TERM; exit 0' TERM INT
	while :; do
		sleep 3600 &
		wait "$!" || true
	done
}

# end_jobs SIGNAL: sends SIGNAL to every background job of this shell.
end_jobs() {
	local pids
	pids=$(jobs -p)
	if [[ -n $pids ]]; then
		# shellcheck disable=SC2086 # one pid per word
		kill -"$1" $pids 2>/dev/null || true
	fi
}

# run_one_job COMMAND...: the second half of the entrypoint, which the first
# half execs once the GARM secrets are unset, so that they are neither in this
# process's environment (/proc/1/environ, readable by the job) nor the job's.
# Runs the runner as a child, passes a stop request on to it, and once the
# runner has taken its one job and exited, stays up.
RUNNER_PID=""
STOPPING=false
stop_runner() {
	STOPPING=true
	# TERM for INT too: the runner, started in the background, ignores INT.
	# Every job rather than $RUNNER_PID: the request may come between the
	# runner's start and the assignment of its pid (see stay_up).
	end_jobs TERM
}
run_one_job() {
	local rc
	trap stop_runner TERM INT
	"$@" &
	RUNNER_PID=$!
	# A stop request that came before the runner started had nothing to pass
	# on to; the runner must still hear it rather than run a whole job.
	if [[ $STOPPING == true ]]; then
		end_jobs TERM
	fi
	while :; do
		if wait "$RUNNER_PID"; then rc=0; else rc=$?; fi
		# wait also returns when a trapped signal arrives; the runner may
		# still be shutting down then.
		kill -0 "$RUNNER_PID" 2>/dev/null || break
	done
	if [[ $STOPPING == true ]]; then
		log "stopped while the runner was running (exit code $rc)"
		exit "$rc"
	fi
	log "the runner finished its one job (exit code $rc); nothing more to do, staying up until GARM deletes this instance"
	stay_up
}

if [[ ${1-} == --run-one-job ]]; then
	shift
	run_one_job "$@"
fi

# The site's actions cache (docs/runner-contract.md "The site's actions
# cache"). Its secret leaves the environment before this script starts any
# program, so that none inherits it; it reaches only the runner's config file,
# through jq's stdin. Checked in main, once a failure can be reported.
CACHE_SERVER=${RUNNER_CACHE_SERVER-}
CACHE_SECRET=${RUNNER_CACHE_SECRET-}
unset RUNNER_CACHE_SECRET

# A container that starts again after its runner was registered (a crash, a
# node restart, the platform restarting it) has nothing left to do: its
# registration is spent and GARM no longer accepts its token. The marker is
# written when the runner is registered, into the container's own filesystem,
# which a docker restart keeps (a node restart included) and a new container
# never has. Kubernetes restarts a container with a fresh filesystem (the
# generated Deployment mounts no volume, pkg/deploygen/kube.go:287); there
# GARM's refusal of the token tells the same (see "reporting installing").
USED_MARKER="${RUNNER_HOME:-/home/runner}/.garm-runner-registered"
if [[ -e $USED_MARKER ]]; then
	log "this container already registered its runner ($USED_MARKER exists) and takes no second job; nothing to do, staying up until GARM deletes this instance"
	stay_up
fi

# --- failure handling --------------------------------------------------------
# STEP names what is being done, so that an unexpected error (set -e) still
# produces a meaningful "failed" message for GARM. die() sets a precise one.
STEP="starting"
FAIL_MSG=""
# Only true once GARM has accepted our first callback: if GARM cannot be
# reached (or rejects the token), reporting the failure cannot work either.
CAN_REPORT=false
STATE_DIR=""

die() {
	FAIL_MSG="$*"
	exit 1
}

on_exit() {
	local rc=$?
	trap - EXIT
	if [[ -n $STATE_DIR ]]; then
		rm -rf -- "$STATE_DIR"
	fi
	if ((rc != 0)); then
		local msg=${FAIL_MSG:-"$STEP failed (exit code $rc)"}
		log "error: $msg"
		if [[ $CAN_REPORT == true ]]; then
			post_status failed "$msg" || log "could not report the failure to GARM ($HTTP_ERROR)"
		fi
	fi
	exit "$rc"
}
trap on_exit EXIT
# A stop request during bootstrap is a failure GARM should hear about.
trap 'FAIL_MSG="runner bootstrap interrupted by a signal"; exit 143' TERM INT

# --- settings ----------------------------------------------------------------
# setting VAR NAME DEFAULT MIN MAX WHAT: sets VAR to the knob NAME (DEFAULT
# when unset), a whole number from MIN to MAX, and refuses anything else naming
# NAME. Bash arithmetic wraps past 2^63 (a value of 20 digits would turn into a
# negative or a tiny deadline), so the digits are bounded before the number is
# read; a leading zero is refused, as bash would read it as octal.
setting() {
	local var=$1 name=$2 value=${!2:-$3} min=$4 max=$5 what=$6
	if [[ $value =~ ^(0|[1-9][0-9]{0,8})$ ]] && ((value >= min && value <= max)); then
		printf -v "$var" '%s' "$value"
		return
	fi
	die "$name must be $what from $min to $max, not '${value:0:40}'"
}
# The back-off doubles per retry: 20 retries from an hour stay far from any
# overflow.
setting RETRIES ENTRYPOINT_RETRIES 5 1 20 "a number of attempts"
setting RETRY_DELAY ENTRYPOINT_RETRY_DELAY 2 0 3600 "a whole number of seconds"
# Registration normally takes seconds; the bound only has to catch a forge
# that cannot be reached at all, well inside GARM's bootstrap timeout.
setting REGISTER_TIMEOUT ENTRYPOINT_REGISTER_TIMEOUT 180 1 86400 "a whole number of seconds"
# The sidecar's image may still be pulled after the runner container started
# (the kubelet pulls and starts a pod's containers one after another), so the
# bound is generous, yet well inside GARM's bootstrap timeout.
setting DOCKER_TIMEOUT ENTRYPOINT_DOCKER_TIMEOUT 300 1 86400 "a whole number of seconds"
# The forge URL handed to the runner (set per forge below; named in failures).
FORGE_INSTANCE=""

for tool in curl jq timeout; do
	command -v "$tool" >/dev/null || die "$tool is not installed in the image"
done

[[ -n ${BEARER_TOKEN:-} ]] || die "BEARER_TOKEN is not set"
[[ -n ${CALLBACK_URL:-} ]] || die "CALLBACK_URL is not set"
[[ -n ${METADATA_URL:-} ]] || die "METADATA_URL is not set"

# GARM hands out the callback URL with or without the /status suffix.
CALLBACK_BASE=${CALLBACK_URL%/}
CALLBACK_BASE=${CALLBACK_BASE%/status}
STATUS_URL="$CALLBACK_BASE/status"
SYSTEM_INFO_URL="$CALLBACK_BASE/system-info"
METADATA_BASE=${METADATA_URL%/}

STATE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/$SELF.XXXXXX")

# --- HTTP --------------------------------------------------------------------
CURL_TLS_ARGS=()
HTTP_CODE=""
HTTP_ERROR=""

# Exit codes of curl that no retry can fix: malformed URL, TLS peer
# verification failed, unusable CA file.
is_permanent_curl_error() {
	case $1 in
	3 | 60 | 77) return 0 ;;
	*) return 1 ;;
	esac
}

# http METHOD URL OUTFILE AUTH [JSON_BODY]
#   AUTH: garm (instance token) or download (RUNNER_DOWNLOAD_TOKEN if set).
# Succeeds on a 2xx answer. Transport errors, 408, 429 and 5xx are retried with
# exponential back-off; other answers fail at once (a 401 will not heal).
# Sets HTTP_CODE and, on failure, HTTP_ERROR, which the caller's one line about
# the failure names.
http() {
	local method=$1 url=$2 out=$3 auth=$4 body=${5-}
	local token="" attempt=1 delay=$RETRY_DELAY rc code retry
	# -q: a ~/.curlrc must not change TLS or proxy behaviour behind our back.
	# Proxies come from HTTP(S)_PROXY/NO_PROXY, which curl reads itself.
	local args=(-q -sS --connect-timeout 10 -X "$method" -o "$out" -w '%{http_code}' "${CURL_TLS_ARGS[@]}")
	case $auth in
	garm)
		token=$BEARER_TOKEN
		args+=(--max-time 60)
		;;
	download)
		token=${RUNNER_DOWNLOAD_TOKEN:-}
		# Release downloads redirect to a storage host; curl does not pass
		# our Authorization header on to another host.
		args+=(--max-time 900 -L)
		;;
	*) die "internal error: unknown auth kind $auth" ;;
	esac
	if [[ -n $body ]]; then
		args+=(-H 'Content-Type: application/json' --data-binary "$body")
	fi
	# Never put a token on the command line (visible in /proc): headers are
	# read from stdin instead.
	if [[ -n $token ]]; then
		args+=(-H @-)
	fi
	# Query strings may carry signatures; keep them out of the log.
	local shown=${url%%\?*}
	while :; do
		if [[ -n $token ]]; then
			if code=$(curl "${args[@]}" "$url" <<<"Authorization: Bearer $token"); then rc=0; else rc=$?; fi
		else
			if code=$(curl "${args[@]}" "$url" </dev/null); then rc=0; else rc=$?; fi
		fi
		HTTP_CODE=${code:-000}
		if ((rc == 0)) && [[ $HTTP_CODE == 2[0-9][0-9] ]]; then
			HTTP_ERROR=""
			return 0
		fi
		retry=false
		if ((rc != 0)); then
			HTTP_ERROR="curl exit code $rc"
			is_permanent_curl_error "$rc" || retry=true
		else
			HTTP_ERROR="HTTP $HTTP_CODE"
			case $HTTP_CODE in
			408 | 429 | 5[0-9][0-9]) retry=true ;;
			esac
		fi
		if [[ $retry != true ]] || ((attempt >= RETRIES)); then
			return 1
		fi
		log "$method $shown failed: $HTTP_ERROR; attempt $attempt of $RETRIES, retrying in ${delay}s"
		sleep "$delay"
		delay=$((delay * 2))
		attempt=$((attempt + 1))
	done
}

# post_status STATUS MESSAGE [AGENT_ID]
post_status() {
	local body
	if [[ -n ${3-} ]]; then
		body=$(jq -cn --arg s "$1" --arg m "$2" --argjson id "$3" '{status: $s, message: $m, agent_id: $id}')
	else
		body=$(jq -cn --arg s "$1" --arg m "$2" '{status: $s, message: $m}')
	fi
	http POST "$STATUS_URL" /dev/null garm "$body"
}

# --- CA bundle and proxies -----------------------------------------------------
# GARM_CA_BUNDLE holds the CA(s) of GARM and of the forge. curl's --cacert and
# SSL_CERT_FILE replace the default trust store, so they get the system bundle
# plus GARM's; NODE_EXTRA_CA_CERTS is additive and gets GARM's alone.
setup_ca_bundle() {
	[[ -n ${GARM_CA_BUNDLE:-} ]] || return 0
	STEP="installing the CA bundle"
	log "trusting GARM_CA_BUNDLE for GARM, the forge and the job"
	# Not in STATE_DIR: the runner and the job keep using these files.
	local ca_dir
	ca_dir=$(mktemp -d "${TMPDIR:-/tmp}/garm-ca.XXXXXX")
	chmod 0755 "$ca_dir"
	local garm_pem="$ca_dir/garm-ca-bundle.pem" combined="$ca_dir/ca-bundle.pem"
	local system_bundle=${ENTRYPOINT_SYSTEM_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
	local pem=$GARM_CA_BUNDLE
	[[ $pem == *"-----BEGIN CERTIFICATE-----"* ]] || die "GARM_CA_BUNDLE contains no PEM certificate"
	# Env files (docker deployments) cannot hold line breaks; accept them
	# written as the two characters \n.
	if [[ $pem != *$'\n'* ]]; then
		pem=${pem//\\n/$'\n'}
	fi
	printf '%s\n' "$pem" >"$garm_pem"
	{
		if [[ -r $system_bundle ]]; then
			cat -- "$system_bundle"
		fi
		cat -- "$garm_pem"
	} >"$combined"
	chmod 0644 "$garm_pem" "$combined"
	CURL_TLS_ARGS=(--cacert "$combined")
	# The runner and the job's tools each read a different variable.
	export NODE_EXTRA_CA_CERTS="$garm_pem" SSL_CERT_FILE="$combined" CURL_CA_BUNDLE="$combined" \
		GIT_SSL_CAINFO="$combined" REQUESTS_CA_BUNDLE="$combined"

	# Best effort: tools that ignore the variables above use the system store.
	# update-ca-certificates wants one certificate per file.
	local sys_dir=${ENTRYPOINT_SYSTEM_CA_DIR:-/usr/local/share/ca-certificates}
	if [[ -d $sys_dir && -w $sys_dir ]] && command -v update-ca-certificates >/dev/null; then
		if csplit -s -z -f "$sys_dir/garm-ca-" -b '%02d.crt' "$garm_pem" '/-----BEGIN CERTIFICATE-----/' '{*}' &&
			update-ca-certificates >/dev/null 2>&1; then
			log "added GARM_CA_BUNDLE to the system trust store"
		else
			log "warning: could not add GARM_CA_BUNDLE to the system trust store"
		fi
	fi
}

# curl ignores upper-case HTTP_PROXY (httpoxy) while other tools only read one
# spelling: make both spellings carry the same value.
sync_proxy_env() {
	local upper lower
	for upper in HTTP_PROXY HTTPS_PROXY NO_PROXY; do
		lower=${upper,,}
		if [[ -n ${!upper:-} && -z ${!lower:-} ]]; then
			export "$lower=${!upper}"
		elif [[ -n ${!lower:-} && -z ${!upper:-} ]]; then
			export "$upper=${!lower}"
		fi
	done
}

# --- helpers -------------------------------------------------------------------
# fetch_registration_token: sets REG_TOKEN (not exported). GARM serves it once.
REG_TOKEN=""
fetch_registration_token() {
	STEP="fetching the registration token"
	log "fetching the registration token"
	local file="$STATE_DIR/registration-token"
	http GET "$METADATA_BASE/runner-registration-token" "$file" garm ||
		die "fetching the registration token failed ($HTTP_ERROR)"
	REG_TOKEN=$(<"$file")
	rm -f -- "$file"
	# The body is raw text, but tolerate a JSON string and stray whitespace.
	REG_TOKEN=${REG_TOKEN//[$'\r\n\t ']/}
	REG_TOKEN=${REG_TOKEN#\"}
	REG_TOKEN=${REG_TOKEN%\"}
	[[ -n $REG_TOKEN ]] || die "GARM returned an empty registration token"
}

# read_agent_id FILE KEY: sets AGENT_ID to the forge's runner id from a .runner
# file (a global, not printed: die() must not run in a subshell, where the
# EXIT trap is reset). The GitHub runner writes the file with a UTF-8 BOM.
AGENT_ID=""
read_agent_id() {
	local file=$1 key=$2 content
	STEP="reading the runner id"
	[[ -s $file ]] || die "the runner did not write $file"
	content=$(<"$file")
	content=${content#$'\xef\xbb\xbf'}
	AGENT_ID=$(jq -r --arg k "$key" '.[$k] // empty' <<<"$content" 2>/dev/null) || AGENT_ID=""
	[[ $AGENT_ID =~ ^[0-9]+$ ]] || die "no numeric $key in $(basename -- "$file")"
}

# os_release KEY: a value from os-release, without quotes (never sourced: the
# file is data, not code).
os_release() {
	local key=$1 file line value
	for file in "${ENTRYPOINT_OS_RELEASE:-/etc/os-release}" /usr/lib/os-release; do
		[[ -r $file ]] || continue
		while IFS= read -r line || [[ -n $line ]]; do
			if [[ $line == "$key="* ]]; then
				value=${line#*=}
				value=${value#[\"\']}
				value=${value%[\"\']}
				printf '%s' "$value"
				return 0
			fi
		done <"$file"
		return 0
	done
}

# report_registered AGENT_ID: marks the container as used (see USED_MARKER),
# then reports system-info and idle. After idle GARM no longer accepts the
# instance token.
report_registered() {
	local agent_id=$1 body
	STEP="writing $USED_MARKER"
	: >"$USED_MARKER"
	log "runner registered with id $agent_id; reporting system information and idle"
	STEP="reporting system information"
	body=$(jq -cn --arg n "$(os_release NAME)" --arg v "$(os_release VERSION_ID)" --argjson id "$agent_id" \
		'{os_name: $n, os_version: $v, agent_id: $id}')
	http POST "$SYSTEM_INFO_URL" /dev/null garm "$body" || die "reporting system information failed ($HTTP_ERROR)"
	STEP="reporting the runner as idle"
	post_status idle "runner $RUNNER_NAME registered (agent id $agent_id); waiting for a job" "$agent_id" ||
		die "reporting the runner as idle failed ($HTTP_ERROR)"
	# The token is dead now; a later failure has nobody to tell.
	CAN_REPORT=false
}

# download_runner DEST: fetch RUNNER_DOWNLOAD_URL to DEST and check its sha256.
download_runner() {
	local dest=$1
	STEP="downloading the runner"
	log "downloading the runner from ${RUNNER_DOWNLOAD_URL%%\?*}"
	http GET "$RUNNER_DOWNLOAD_URL" "$dest" download || die "downloading the runner failed ($HTTP_ERROR)"
	if [[ -n ${RUNNER_DOWNLOAD_SHA256:-} ]]; then
		local sum
		sum=$(sha256sum -- "$dest")
		sum=${sum%% *}
		[[ ${sum,,} == "${RUNNER_DOWNLOAD_SHA256,,}" ]] || die "the downloaded runner does not match RUNNER_DOWNLOAD_SHA256"
	fi
}

# --- registration ----------------------------------------------------------------
# register_runner DESCRIPTION COMMAND...: runs a registration command with its
# output captured (so it can be inspected and is logged without secrets),
# retried with the HTTP back-off, and bounded by REGISTER_TIMEOUT in total: a
# runner's register pings an unreachable forge forever. Sets REGISTER_OUTPUT.
# Failures end the script through die(); what is known about a failure is in
# the one-line message GARM gets.
REGISTER_OUTPUT=""
register_runner() {
	local what=$1 attempt=1 delay=$RETRY_DELAY rc deadline remaining out
	shift
	out="$STATE_DIR/register.out"
	deadline=$((SECONDS + REGISTER_TIMEOUT))
	while :; do
		remaining=$((deadline - SECONDS))
		((remaining > 0)) || remaining=1
		# timeout(1) signals the command's whole process group, so helper
		# processes of the runner go too; -k: a runner ignoring TERM is killed.
		if timeout -k 5 "$remaining" "$@" </dev/null >"$out" 2>&1; then rc=0; else rc=$?; fi
		REGISTER_OUTPUT=$(<"$out")
		# The runner does not print the token, but its output is relayed to the
		# container log: make sure it cannot carry it there.
		if [[ -n $REG_TOKEN ]]; then
			REGISTER_OUTPUT=${REGISTER_OUTPUT//"$REG_TOKEN"/"[registration token]"}
		fi
		if [[ -n $REGISTER_OUTPUT ]]; then
			local line
			while IFS= read -r line; do
				log "$what: $line"
			done <<<"$REGISTER_OUTPUT"
		fi
		((rc == 0)) && return 0
		if ((rc == 124 || rc == 137)); then
			die "$what did not reach the forge at $FORGE_INSTANCE within ${REGISTER_TIMEOUT}s; check that the container can reach it (URL, proxy, CA)"
		fi
		# Forgejo < 15 creates the runner non-ephemeral and then fails: every
		# retry would leave one more stale runner behind.
		if [[ $REGISTER_OUTPUT == *"does not support ephemeral runners"* ||
			$REGISTER_OUTPUT == *"requires Forgejo 15"* ]]; then
			die "Forgejo 15 or newer is required for ephemeral runners: upgrade the Forgejo at $FORGE_INSTANCE and delete the non-ephemeral runner $RUNNER_NAME it registered"
		fi
		if ((attempt >= RETRIES)) || ((SECONDS + delay >= deadline)); then
			local last=${REGISTER_OUTPUT##*$'\n'}
			die "$what against $FORGE_INSTANCE failed after $attempt attempt(s) (exit code $rc)${last:+: ${last:0:300}}"
		fi
		log "$what failed (exit code $rc); attempt $attempt of $RETRIES, retrying in ${delay}s"
		sleep "$delay"
		delay=$((delay * 2))
		attempt=$((attempt + 1))
	done
}

# Secrets the job must not inherit. The registration token is a shell
# variable only, but unset it too. exec skips the EXIT trap, so clean up here.
drop_secrets() {
	unset BEARER_TOKEN METADATA_URL CALLBACK_URL RUNNER_DOWNLOAD_TOKEN REG_TOKEN CACHE_SECRET
	rm -rf -- "$STATE_DIR"
	STATE_DIR=""
}

# start_runner COMMAND...: drops the secrets and execs the second half of this
# script (run_one_job), which runs COMMAND for one job and then stays up.
start_runner() {
	drop_secrets
	log "starting the runner for one job: $*"
	exec "$BASH" -- "$SCRIPT" --run-one-job "$@"
}

# --- Docker (RUNNER_DOCKER) ------------------------------------------------------
# DOCKER_MODE: none, dind or buildkit; checked in main.
DOCKER_MODE=${RUNNER_DOCKER:-none}

# wait_for_docker: returns once the daemon at DOCKER_HOST answers the Docker
# API's ping (GET /_ping, "OK"), and fails naming the daemon when it has not
# within DOCKER_TIMEOUT. Runs before the registration token is fetched, so a
# pod whose sidecar never starts spends nothing.
wait_for_docker() {
	local host=${DOCKER_HOST:-} sock deadline answer="$STATE_DIR/docker-ping"
	STEP="checking DOCKER_HOST"
	[[ -n $host ]] || die "RUNNER_DOCKER=dind but DOCKER_HOST is not set: the provider sets it to the dind sidecar's socket (unix:///run/dind/docker.sock)"
	# The sidecar listens on a socket in a volume shared by the pod, never on
	# TCP (docs/runner-contract.md).
	[[ $host == unix:///* ]] || die "RUNNER_DOCKER=dind needs DOCKER_HOST to be a unix:// socket, not '$host'"
	sock=${host#unix://}
	STEP="waiting for the Docker daemon at $host"
	log "waiting up to ${DOCKER_TIMEOUT}s for the Docker daemon at $host"
	deadline=$((SECONDS + DOCKER_TIMEOUT))
	while :; do
		# --noproxy: HTTP(S)_PROXY must not apply to the local socket.
		if [[ -S $sock ]] && curl -q -fsS --noproxy '*' --max-time 5 --unix-socket "$sock" \
			-o "$answer" http://docker/_ping 2>/dev/null && [[ $(<"$answer") == OK ]]; then
			log "the Docker daemon at $host answers"
			return 0
		fi
		((SECONDS < deadline)) ||
			die "the Docker daemon at $host did not answer within ${DOCKER_TIMEOUT}s: check the dind sidecar of this runner's pod (its status and log; it runs privileged and listens on $sock)"
		sleep 1
	done
}

# make_buildx_builder: makes a `docker buildx` builder with the remote driver
# on BUILDKIT_HOST the runner user's default, so that a job's
# `docker buildx build` goes to the BuildKit sidecar. Creating it does not
# contact buildkitd; a build does. The provider's sidecar listens on TCP on
# the pod's loopback (docs/runner-contract.md, "Docker in the runner's pod");
# a unix:// socket is taken too, for a pod of someone else's.
readonly BUILDX_BUILDER=garm-buildkit
make_buildx_builder() {
	local host=${BUILDKIT_HOST:-} out="$STATE_DIR/buildx.out"
	STEP="making the buildx builder"
	[[ -n $host ]] || die "RUNNER_DOCKER=buildkit but BUILDKIT_HOST is not set: the provider sets it to the BuildKit sidecar's address on the pod's loopback (tcp://127.0.0.1:1234)"
	[[ $host == tcp://?* || $host == unix:///* ]] || die "RUNNER_DOCKER=buildkit needs BUILDKIT_HOST to be a tcp:// address or a unix:// socket, not '$host'"
	command -v docker >/dev/null || die "RUNNER_DOCKER=buildkit needs the Docker CLI with the buildx plugin in the image, and docker is not installed"
	log "making the docker buildx builder $BUILDX_BUILDER (remote driver, $host) the default"
	if ! timeout -k 5 60 docker buildx create --name "$BUILDX_BUILDER" --driver remote --use "$host" </dev/null >"$out" 2>&1; then
		local last
		last=$(<"$out")
		last=${last##*$'\n'}
		die "could not make the docker buildx builder on $host${last:+: ${last:0:300}}"
	fi
}

# docker_labels LABELS: Forgejo/Gitea labels for RUNNER_DOCKER=dind, so that
# jobs run in containers of the sidecar's daemon. A label without a scheme
# becomes NAME:docker://IMAGE, IMAGE being RUNNER_JOB_IMAGES[NAME] or else
# RUNNER_DEFAULT_JOB_IMAGE (GARM's runner-controller-id/runner-pool-id labels
# get the default too). A pool tag that already names its image
# (NAME:docker://IMAGE) is kept as written: it is the more specific request.
# NAME:host is kept too: such jobs run in the runner container, where the
# Docker CLI and DOCKER_HOST reach the same daemon. Any other scheme is refused.
# Sets RUNNER_FORGE_LABELS (comma-joined).
docker_labels() {
	local images=${RUNNER_JOB_IMAGES:-} default=${RUNNER_DEFAULT_JOB_IMAGE:-}
	local label name rest image parts=() out=()
	# Labels are joined with commas and parsed on colons only up to the
	# scheme: an image may hold colons, never commas or blanks.
	local image_re='^[^[:space:],]+$'
	[[ -n $default ]] || die "RUNNER_DOCKER=dind but RUNNER_DEFAULT_JOB_IMAGE is not set: the provider sets the image for jobs of labels without one"
	[[ $default =~ $image_re ]] || die "RUNNER_DEFAULT_JOB_IMAGE '$default' is not an image reference"
	[[ -n $images ]] || images='{}'
	if ! jq -e --arg re "$image_re" 'type == "object" and all(.[]; type == "string" and test($re))' \
		<<<"$images" >/dev/null 2>&1; then
		die "RUNNER_JOB_IMAGES is not a JSON object mapping each label name to an image (e.g. {\"ubuntu-latest\": \"docker.io/library/node:22-bookworm\"})"
	fi
	IFS=, read -r -a parts <<<"$1"
	for label in "${parts[@]}"; do
		label=${label#"${label%%[![:space:]]*}"}
		label=${label%"${label##*[![:space:]]}"}
		[[ -n $label ]] || continue
		name=${label%%:*}
		if [[ $label == *:* ]]; then
			rest=${label#*:}
			case $rest in
			host) out+=("$label") ;;
			docker://?*)
				[[ ${rest#docker://} =~ $image_re ]] || die "label '$label' does not name a valid image after docker://"
				out+=("$label")
				;;
			*) die "label '$label' asks for the '${rest%%:*}' scheme: with RUNNER_DOCKER=dind give the pool tag without a scheme (its image comes from the pool's job images), as NAME:docker://IMAGE or as NAME:host" ;;
			esac
			continue
		fi
		image=$(jq -r --arg n "$name" '.[$n] // empty' <<<"$images")
		out+=("$name:docker://${image:-$default}")
	done
	local IFS=,
	RUNNER_FORGE_LABELS="${out[*]}"
}

# --- the site's actions cache -----------------------------------------------------
# The provider sets RUNNER_CACHE_SERVER and RUNNER_CACHE_SECRET (captured into
# CACHE_SERVER and CACHE_SECRET at the top) on a runner whose site cache is
# Ready: the address of the site's `forgejo-runner cache-server` and the
# secret it checks every request's signature with. See docs/site-cache.md
# "What the runner image does with the site cache" for the sources.

# check_site_cache: refuses values the provider must never send, each in one
# line naming the variable. GitHub's runner has no setting for a cache
# server, so there they are dropped unlooked-at.
check_site_cache() {
	local shown
	[[ -n $CACHE_SERVER || -n $CACHE_SECRET ]] || return 0
	STEP="checking the site cache settings"
	if [[ $FORGE_TYPE == github ]]; then
		log "not using the site's actions cache: GitHub's runner has no external cache (it takes the cache's address from GitHub's service); a dind sidecar still pulls Docker Hub images through the site's registry mirror"
		CACHE_SERVER=""
		CACHE_SECRET=""
		return 0
	fi
	[[ -n $CACHE_SECRET ]] || die "RUNNER_CACHE_SERVER is set but RUNNER_CACHE_SECRET is not: the provider sets both for a runner whose site cache is Ready, or neither; this is a bug of the provider, report it"
	[[ -n $CACHE_SERVER ]] || die "RUNNER_CACHE_SECRET is set but RUNNER_CACHE_SERVER is not: the provider sets both for a runner whose site cache is Ready, or neither; this is a bug of the provider, report it"
	# The URL is no secret (the provider puts it in env_vars) and may be
	# shown, made printable and cut short. No path: forgejo-runner's cache
	# proxy replaces the server URL's path with the request's own.
	shown=${CACHE_SERVER//[[:cntrl:]]/?}
	if ((${#CACHE_SERVER} > 2048)) ||
		! [[ $CACHE_SERVER =~ ^https?://[^/?#[:space:][:cntrl:]]+/?$ ]]; then
		die "RUNNER_CACHE_SERVER must be the cache server's URL, http:// or https:// and its host[:port] only, without blanks or control characters, not '${shown:0:200}'"
	fi
	# Never shown: only what is wrong with it.
	((${#CACHE_SECRET} <= 1024)) || die "RUNNER_CACHE_SECRET is longer than 1024 characters; the provider sends the site cache's secret as it is configured, which must be shorter"
	[[ $CACHE_SECRET != *[[:cntrl:]]* ]] || die "RUNNER_CACHE_SECRET holds a control character (a line break?); the site cache's secret must be one line of printable characters"
}

# site_cache_use FLAVOR: whether this runner points its jobs at the site's
# cache; says why not when it does not. Needs RUNNER_FORGE_LABELS.
#
# Only forgejo-runner speaks the cache server's protocol: Gitea's runner
# registers each job's token with a gitea-runner cache-server instead.
#
# And only where no job can read the secret: it signs cache requests for any
# repository, so a job holding it could read and overwrite the cache entries
# of every repository whose runners use the same cache (all of this GARM
# controller's). A job of a host label runs in this container as the
# runner's user and can read the config file; a job of a Docker label runs in
# a container of the dind sidecar's daemon, which has neither this
# container's files nor its processes (short of escaping to the node through
# the privileged daemon, the trust dind already asks for). See
# docs/site-cache.md "What isolation holds".
site_cache_use() {
	local flavor=$1 label host_labels=() parts=()
	[[ -n $CACHE_SERVER ]] || return 1
	if [[ $flavor != forgejo ]]; then
		log "not using the site's actions cache at $CACHE_SERVER: it is forgejo-runner's cache server, whose protocol Gitea's runner does not speak; the runner keeps its own cache"
		return 1
	fi
	if [[ $DOCKER_MODE != dind ]]; then
		log "not using the site's actions cache at $CACHE_SERVER: jobs run in this container as the runner's user (RUNNER_DOCKER=$DOCKER_MODE) and could read the cache's secret, and with it every repository's cache entries; only runners whose jobs all run in containers of a dind sidecar use it; the runner keeps its own cache"
		return 1
	fi
	IFS=, read -r -a parts <<<"$RUNNER_FORGE_LABELS"
	for label in "${parts[@]}"; do
		[[ $label != *:host ]] || host_labels+=("${label%:host}")
	done
	if ((${#host_labels[@]} > 0)); then
		local IFS=,
		log "not using the site's actions cache at $CACHE_SERVER: jobs of the label(s) ${host_labels[*]} run in this container as the runner's user and could read the cache's secret, and with it every repository's cache entries; the runner keeps its own cache"
		return 1
	fi
	log "using the site's actions cache at $CACHE_SERVER"
	return 0
}

# write_runner_config FILE USE_CACHE: the forgejo-runner / Gitea runner config for
# RUNNER_DOCKER=dind (JSON, which both read as YAML). docker_host names the
# sidecar's daemon and has the runner mount its socket into job and service
# containers as /var/run/docker.sock, so `docker build` works in a container
# step; without it forgejo-runner mounts nothing ("-" is its default). The
# socket mount needs no valid_volumes entry (the runner allows it itself).
# network "" gives each job a network of its own, which its service containers
# join; privileged stays false: only the sidecar needs it. Sources:
# docs/runner-contract.md "What the example image does with Docker".
# With USE_CACHE true it names the site's cache server and its secret too
# (forgejo-runner's cache.external_server and cache.secret; docs/site-cache.md
# "What the runner image does with the site cache"). The secret travels on
# jq's stdin, never in an argv, and the file is private before it is written.
write_runner_config() {
	local file=$1 use_cache=$2 secret=""
	STEP="writing the runner config $file"
	if [[ $use_cache == true ]]; then
		secret=$CACHE_SECRET
	fi
	install -m 0600 /dev/null "$file"
	printf '%s' "$secret" | jq -Rs --arg host "$DOCKER_HOST" --arg server "$CACHE_SERVER" --argjson cache "$use_cache" \
		'{container: {docker_host: $host, network: "", privileged: false, valid_volumes: []}}
		+ if $cache then {cache: {external_server: $server, secret: .}} else {} end' >"$file"
}

# --- GitHub actions/runner -------------------------------------------------------
run_github() {
	local home=${RUNNER_HOME:-/home/runner}
	FORGE_INSTANCE=$FORGE_URL
	STEP="preparing the runner directory $home"
	mkdir -p -- "$home"
	cd -- "$home"

	if [[ ! -x ./config.sh ]]; then
		[[ -n ${RUNNER_DOWNLOAD_URL:-} ]] || die "no runner in $home and RUNNER_DOWNLOAD_URL is not set"
		local archive="$STATE_DIR/${RUNNER_DOWNLOAD_FILENAME:-actions-runner.tar.gz}"
		download_runner "$archive"
		STEP="unpacking the runner"
		tar -xzf "$archive" -C "$home"
		rm -f -- "$archive"
		[[ -x ./config.sh ]] || die "the downloaded archive contains no config.sh"
	fi

	if [[ ${JIT_CONFIG_ENABLED:-false} == true ]]; then
		# The JIT config carries its own work folder: RUNNER_WORKDIR is
		# neither needed nor created here.
		STEP="fetching the JIT runner credentials"
		log "fetching the JIT runner credentials"
		local name
		for name in runner credentials credentials_rsaparams; do
			# Created private before curl writes the key material into it.
			install -m 0600 /dev/null "$home/.$name"
			http GET "$METADATA_BASE/credentials/$name" "$home/.$name" garm ||
				die "fetching the JIT credential file .$name failed ($HTTP_ERROR)"
		done
	else
		local workdir=${RUNNER_WORKDIR:-/runner/_work}
		STEP="creating RUNNER_WORKDIR $workdir"
		mkdir -p -- "$workdir"
		fetch_registration_token
		STEP="configuring the runner"
		log "configuring the runner with config.sh"
		# config.sh has no token file option; the token is in its argv for
		# the few seconds registration takes, inside this container only.
		local args=(--unattended --url "$FORGE_URL" --token "$REG_TOKEN" --name "$RUNNER_NAME"
			--labels "${RUNNER_LABELS:-}" --work "$workdir" --ephemeral --disableupdate --no-default-labels)
		if [[ -n ${RUNNER_GROUP:-} ]]; then
			args+=(--runnergroup "$RUNNER_GROUP")
		fi
		register_runner "config.sh" ./config.sh "${args[@]}"
	fi

	read_agent_id "$home/.runner" agentId
	report_registered "$AGENT_ID"
	start_runner ./run.sh
}

# --- Forgejo runner / Gitea runner --------------------------------------------------
# Labels without RUNNER_DOCKER=dind: there is no Docker daemon, so jobs run
# in the container itself. forgejo-runner >= 8 reads a label without a scheme
# as a Docker label (and then insists on a Docker socket); Gitea's runner reads
# it as host. Writing ":host" explicitly means the same to both. GARM's own
# runner-controller-id=... and runner-pool-id=... labels get it too: only the
# name reaches the forge, which is what GARM matches on. Any other scheme asks
# for an isolation this container cannot give, and is refused.
# Sets RUNNER_FORGE_LABELS (comma-joined).
RUNNER_FORGE_LABELS=""
host_labels() {
	local label parts=() out=() rest
	IFS=, read -r -a parts <<<"$1"
	for label in "${parts[@]}"; do
		label=${label#"${label%%[![:space:]]*}"}
		label=${label%"${label##*[![:space:]]}"}
		[[ -n $label ]] || continue
		if [[ $label != *:* ]]; then
			out+=("$label:host")
			continue
		fi
		rest=${label#*:}
		case $rest in
		host) out+=("$label") ;;
		host:*) die "label '$label' is not valid: the 'host' scheme takes no argument; give the pool tag without a scheme or as NAME:host" ;;
		*) die "label '$label' asks for the '${rest%%:*}' scheme, but jobs run in the runner container itself (no Docker, no LXC): give the pool tag without a scheme or as NAME:host, or give the pool docker = \"dind\" for Docker labels" ;;
		esac
	done
	local IFS=,
	RUNNER_FORGE_LABELS="${out[*]}"
}

# find_forge_runner: prints the runner binary from PATH, fails when none.
find_forge_runner() {
	local candidate
	for candidate in forgejo-runner gitea-runner act_runner; do
		if command -v -- "$candidate"; then
			return 0
		fi
	done
	return 1
}

# help_of BIN ARGS...: the --help text of a subcommand (stdout and stderr),
# empty when the program fails to answer. Never runs anything else.
help_of() {
	local bin=$1
	shift
	timeout -k 5 30 "$bin" "$@" --help </dev/null 2>&1 || true
}

# has_flag HELP NAME: whether HELP (cobra's --help output) defines --NAME in
# one of its flag lines ("  -w, --wait ..." or "      --once ..."); a flag
# merely mentioned in another flag's description does not count.
has_flag() {
	local line re="^[[:space:]]+(-[[:alnum:]], )?--$2([[:space:]]|$)"
	while IFS= read -r line; do
		[[ $line =~ $re ]] && return 0
	done <<<"$1"
	return 1
}

# has_subcommand HELP NAME: whether HELP is the help of subcommand NAME
# itself. A runner without that subcommand answers with an error, or (its root
# command taking an event name as argument, like act_runner) with the root
# command's help, whose usage line does not name NAME.
has_subcommand() {
	local line re="^[[:space:]]+[^[:space:]]+ $2( |$)"
	while IFS= read -r line; do
		[[ $line =~ $re ]] && return 0
	done <<<"$1"
	return 1
}

run_forge_runner() {
	local home=${RUNNER_HOME:-/home/runner} bin flavor
	STEP="preparing the runner directory $home"
	mkdir -p -- "$home"
	cd -- "$home"

	# GARM hands a Gitea endpoint's API base URL over as repo_url; the
	# runners want the instance URL.
	FORGE_INSTANCE=$FORGE_URL
	case $FORGE_INSTANCE in
	*/api/v1) FORGE_INSTANCE=${FORGE_INSTANCE%/api/v1} ;;
	*/api/v1/) FORGE_INSTANCE=${FORGE_INSTANCE%/api/v1/} ;;
	esac

	if [[ -n ${RUNNER_BIN:-} ]]; then
		bin=$(command -v -- "$RUNNER_BIN") || die "RUNNER_BIN $RUNNER_BIN is not an executable"
	elif ! bin=$(find_forge_runner); then
		[[ -n ${RUNNER_DOWNLOAD_URL:-} ]] ||
			die "no forgejo-runner, gitea-runner or act_runner found and RUNNER_DOWNLOAD_URL is not set"
		mkdir -p -- "$home/bin"
		bin="$home/bin/${RUNNER_DOWNLOAD_FILENAME:-gitea-runner}"
		download_runner "$bin"
		chmod 0755 "$bin"
	fi

	# Decide by what the binary can do, not by its name: forks and renames
	# keep one CLI or the other. Everything is checked before the single-use
	# registration token is fetched, so a refusal spends nothing.
	STEP="probing the runner $bin"
	local register_help one_job_help daemon_help
	register_help=$(help_of "$bin" register)
	has_flag "$register_help" instance ||
		die "$bin does not answer 'register --help' like a Forgejo or Gitea runner (wrong binary or architecture?)"
	one_job_help=$(help_of "$bin" one-job)
	case ${RUNNER_FLAVOR:-} in
	forgejo | gitea) flavor=$RUNNER_FLAVOR ;;
	"")
		if has_subcommand "$one_job_help" one-job; then flavor=forgejo; else flavor=gitea; fi
		;;
	*) die "unsupported RUNNER_FLAVOR '$RUNNER_FLAVOR' (expected forgejo or gitea)" ;;
	esac

	local reg_args=(register --no-interactive --ephemeral --instance "$FORGE_INSTANCE")
	local run_args
	if [[ $flavor == forgejo ]]; then
		# No forgejo-runner has 'daemon --once'; 'one-job --wait' is its way to
		# take exactly one job, and an ephemeral registration needs it.
		if ! has_flag "$register_help" ephemeral || ! has_flag "$one_job_help" wait; then
			die "$bin lacks 'register --ephemeral' or 'one-job --wait': forgejo-runner 12.8 or newer is required (the example image pins 13.x)"
		fi
		run_args=(one-job --wait)
	else
		daemon_help=$(help_of "$bin" daemon)
		if ! has_flag "$register_help" ephemeral || ! has_flag "$daemon_help" once; then
			die "$bin lacks 'register --ephemeral' or 'daemon --once': Gitea's runner act_runner 0.2.12 or newer (or gitea-runner) is required"
		fi
		run_args=(daemon --once)
	fi

	STEP="preparing the runner labels"
	if [[ $DOCKER_MODE == dind ]]; then
		docker_labels "${RUNNER_LABELS:-}"
		# Only a dind runner can use the site cache (site_cache_use), so
		# only it needs a config.
		local config="$home/garm-runner-config.yaml" use_cache=false
		if site_cache_use "$flavor"; then
			use_cache=true
		fi
		write_runner_config "$config" "$use_cache"
		# A persistent flag of both runners' every subcommand.
		reg_args+=(--config "$config")
		run_args+=(--config "$config")
	else
		host_labels "${RUNNER_LABELS:-}"
		site_cache_use "$flavor" || true
	fi
	[[ -n $RUNNER_FORGE_LABELS ]] || die "RUNNER_LABELS is empty; GARM needs its runner-controller-id/runner-pool-id labels"

	fetch_registration_token
	# A token file keeps the token out of every process's argv (readable in
	# /proc by anything in the container); only gitea-runner offers one.
	if has_flag "$register_help" token-file; then
		local token_file="$STATE_DIR/registration-token"
		install -m 0600 /dev/null "$token_file"
		printf '%s' "$REG_TOKEN" >"$token_file"
		reg_args+=(--token-file "$token_file")
	else
		reg_args+=(--token "$REG_TOKEN")
	fi
	reg_args+=(--name "$RUNNER_NAME" --labels "$RUNNER_FORGE_LABELS")

	STEP="registering the runner"
	log "registering an ephemeral $flavor runner with $bin at $FORGE_INSTANCE (labels $RUNNER_FORGE_LABELS)"
	register_runner "runner registration" "$bin" "${reg_args[@]}"

	read_agent_id "$home/.runner" id
	report_registered "$AGENT_ID"
	start_runner "$bin" "${run_args[@]}"
}

# --- main ------------------------------------------------------------------------------
sync_proxy_env
setup_ca_bundle

STEP="reporting installing"
log "reporting installing to GARM"
if ! post_status installing "runner container started; registering ${RUNNER_NAME:-the runner}"; then
	# GARM answers 401 to an instance token, the same answer whatever the
	# reason (cloudbase/garm auth/instance_middleware.go:206-266,
	# auth/jwt.go:89), once the runner reported idle or failed, once the
	# instance is gone, for an earlier create attempt of it, and once the
	# token expired. Nothing this container does, now or after a restart, can
	# change that, and GARM reaps the instance in each case: say so and stay
	# up rather than exit into a restart loop. There is nobody to report to.
	if [[ $HTTP_CODE == 401 ]]; then
		log "GARM no longer accepts this instance's token (HTTP 401 from $STATUS_URL): its runner was already registered by an earlier start of this container, or its bootstrap failed, or the instance is gone or the token expired; nothing to do, staying up until GARM deletes this instance"
		stay_up
	fi
	# GARM is unreachable: there is nobody to report to either.
	die "GARM did not accept the installing status at $STATUS_URL ($HTTP_ERROR)"
fi
CAN_REPORT=true

STEP="checking the environment"
for var in FORGE_TYPE FORGE_URL RUNNER_NAME; do
	[[ -n ${!var:-} ]] || die "$var is not set"
done
check_site_cache

case $DOCKER_MODE in
none) ;;
dind) wait_for_docker ;;
buildkit) make_buildx_builder ;;
*) die "unsupported RUNNER_DOCKER '$RUNNER_DOCKER' (expected none, dind or buildkit)" ;;
esac

case $FORGE_TYPE in
github) run_github ;;
gitea) run_forge_runner ;;
*) die "unsupported FORGE_TYPE '$FORGE_TYPE' (expected github or gitea; Forgejo runs as gitea)" ;;
esac
