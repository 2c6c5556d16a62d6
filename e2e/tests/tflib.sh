# shellcheck shell=bash
# Helpers of the real-TensorFlow tests (tf-inject-*): TFJobs from
# deploy/examples/tf-*.yaml on localhost/tfjob-tf:dev (scripts/build-tf-image,
# fixture e2e_tf_image) with the agent injected. Sourced after lib.sh.

# apply_tf_example FILE NAME [SED_SCRIPT...]: the example under another name,
# edited by the sed scripts (e.g. extra args), in the test namespace.
apply_tf_example() {
	local file=$1 name=$2 s
	local args=(-e "s/^  name: .*/  name: $name/")
	shift 2
	for s in "$@"; do args+=(-e "$s"); done
	sed "${args[@]}" "$REPO/deploy/examples/$file" |
		kubectl -n "$E2E_NS" apply -f - >/dev/null || e2e_fail "apply $file as $name failed"
	e2e_log "applied deploy/examples/$file as $name"
}

# follow_steps JOB LIMIT_S: polls until JOB is Succeeded (fails on Failed or
# the limit) and sets FIRST_STEP to the first STEP (status.progress.
# globalStep, the printer column) seen while it was not finished yet and
# LAST_STEP to the largest seen at any time. With FOLLOW_PROGRESS set it
# also samples PROGRESS and ETA (lib.sh's progress_sample).
follow_steps() {
	local job=$1 limit=$2 phase step deadline=$(($SECONDS + $2))
	FIRST_STEP=0 LAST_STEP=0
	while :; do
		phase=$(job_phase "$job")
		step=$(kubectl -n "$E2E_NS" get tfjob "$job" -o custom-columns=STEP:.status.progress.globalStep --no-headers 2>/dev/null || true)
		case $step in '' | '<none>') ;; *[!0-9]*) e2e_fail "STEP column not an integer: '$step'" ;;
		*)
			[ "$FIRST_STEP" = 0 ] && [ "$phase" != Succeeded ] && [ "$step" -gt 0 ] && FIRST_STEP=$step
			[ "$step" -gt "$LAST_STEP" ] && { LAST_STEP=$step; e2e_log "STEP $step (phase ${phase:-none})"; } ;;
		esac
		[ -z "${FOLLOW_PROGRESS:-}" ] || progress_sample "$job" "$phase"
		[ "$phase" = Succeeded ] && return 0
		[ "$phase" = Failed ] && e2e_fail "$job Failed"
		[ $SECONDS -lt $deadline ] || e2e_fail "$job still '${phase:-none}' after $limit s"
		sleep 1
	done
}

# check_injected POD: the pod got the agent: the init container and the
# tensorflow command started through the copied loader.
check_injected() {
	local init cmd log
	init=$(kubectl -n "$E2E_NS" get pod "$1" -o jsonpath='{.spec.initContainers[0].name}')
	[ "$init" = tfjob-agent-install ] || e2e_fail "$1: first init container '$init', wanted tfjob-agent-install"
	cmd=$(kubectl -n "$E2E_NS" get pod "$1" -o jsonpath='{.spec.containers[?(@.name=="tensorflow")].command}')
	case $cmd in '["/tfj-agent/ld.so","--library-path","/tfj-agent/lib","/tfj-agent/tfjob-agent"'*) ;;
	*) e2e_fail "$1: tensorflow command not wrapped in the agent: $cmd" ;; esac
	# Whole log first: grep -q would stop reading, and kubectl's SIGPIPE
	# fails the pipeline under pipefail.
	log=$(kubectl -n "$E2E_NS" logs "$1" -c tensorflow 2>/dev/null || true)
	grep -q 'comp=agent msg="starting command"' <<<"$log" ||
		e2e_fail "$1: no 'starting command' line of the injected agent in its log"
}

# check_final_accuracy JOB POD: status.progress.accuracy ends equal to the
# "final test accuracy" the program printed in POD (the status is written at
# most every 5 s, so the last report may land after Succeeded).
check_final_accuracy() {
	local job=$1 pod=$2 want acc deadline=$((SECONDS + 30))
	want=$(kubectl -n "$E2E_NS" logs "$pod" -c tensorflow 2>/dev/null | sed -n 's/^final test accuracy \([0-9.]*\)$/\1/p' | tail -n 1)
	[ -n "$want" ] || e2e_fail "no final test accuracy in the log of $pod"
	while :; do
		acc=$(kubectl -n "$E2E_NS" get tfjob "$job" -o jsonpath='{.status.progress.accuracy}')
		[ -n "$acc" ] && awk -v a="$acc" -v w="$want" 'BEGIN { d = a - w; exit !(d < 0.0005 && d > -0.0005) }' && break
		[ $SECONDS -lt $deadline ] ||
			e2e_fail "status.progress.accuracy '$acc' 30 s after Succeeded; $pod's final test accuracy $want"
		sleep 1
	done
	awk -v a="$acc" 'BEGIN { exit !(a > 0.5 && a <= 1) }' || e2e_fail "final accuracy $acc, wanted > 0.5"
	e2e_log "status.progress.accuracy $acc = final test accuracy of $pod"
}
