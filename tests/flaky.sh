#!/usr/bin/env bash
# The flake finder (docs/install.md, The test suite): runs the test suite, or some of
# it, RUNS times per MPI while LOAD busy loops keep LOAD cores busy, then prints every
# test that failed at least once, with how often.
#
#   tests/flaky.sh [-n RUNS] [-l LOAD] [-m MPI[,MPI...]] [-j] [-k EXPR] [-o DIR] [TEST...]
#
#   -n RUNS   runs of the chosen tests per MPI (default 3)
#   -l LOAD   busy loops in the background, one core each (default 2; 0: none)
#   -m MPIS   comma-separated MPIs, each as `make test MPI=...` takes it
#             (default openmpi)
#   -j        only the test files whose tests launch MPI jobs themselves (run_mpi,
#             run_line, run_prog, launcher, mpirun/mpiexec, demo, the cluster)
#   -k EXPR   pytest's -k expression
#   -o DIR    where each run's output goes (default a new directory under /tmp)
#   TEST...   test files or node ids (default: all of tests/)
#
# Every run is `make _test` (the environment of `make test`), one after the other:
# besides the busy loops it adds no load of its own.  The busy loops end with the
# script, on Ctrl-C too.  Exit status: 0 if no test failed, 1 if one did, 2 for bad
# usage.
set -uo pipefail
here=$PWD
cd "$(dirname "$0")/.."
# run from within make (make test's own tests): the runs take only this script's settings
unset MAKEFLAGS MFLAGS MAKELEVEL

usage() {
  sed -n '6,16p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
bad() {
  echo "tests/flaky.sh: $1" >&2
  exit 2
}

runs=3 load=2 mpis=openmpi jobs_only=0 kexpr="" out=""
while getopts ":n:l:m:jk:o:h" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    l) load=$OPTARG ;;
    m) mpis=$OPTARG ;;
    j) jobs_only=1 ;;
    k) kexpr=$OPTARG ;;
    o) out=$OPTARG ;;
    h) usage ;;
    :) bad "-$OPTARG needs a value (tests/flaky.sh -h: usage)" ;;
    *) bad "unknown option -$OPTARG (tests/flaky.sh -h: usage)" ;;
  esac
done
shift $((OPTIND - 1))
[[ $runs =~ ^[1-9][0-9]*$ ]] || bad "-n '$runs' is invalid: expected a number of runs >= 1"
[[ $load =~ ^[0-9]+$ ]] || bad "-l '$load' is invalid: expected a number of busy loops >= 0"
cores=$(nproc)
((load <= cores)) || bad "-l $load is more busy loops than the $cores cores"
IFS=, read -ra mpi_list <<<"$mpis"
((${#mpi_list[@]})) || bad "-m '$mpis' is invalid: expected openmpi, mpich or intelmpi"
for m in "${mpi_list[@]}"; do
  case $m in openmpi | mpich | intelmpi) ;;
    *) bad "-m '$m' is invalid: expected openmpi, mpich or intelmpi (comma-separated)" ;;
  esac
done

tests=("$@")
if ((jobs_only)); then
  ((${#tests[@]} == 0)) || bad "-j chooses the test files itself: give no TEST"
  mapfile -t tests < <(grep -lE 'run_mpi\(|run_line\(|run_prog\(|launcher\(|make_cluster\(|"mpirun"|mpiexec|"demo"' \
    tests/test_*.py | sort)
fi
((${#tests[@]})) || tests=(tests)
for i in "${!tests[@]}"; do  # relative to where the script was started, or the checkout
  t=${tests[$i]} file=${tests[$i]%%::*}
  if [[ $t != /* && -e $here/$file ]]; then
    tests[$i]=$(realpath --relative-to=. "$here/$file")${t:${#file}}
  elif [[ ! -e $file ]]; then
    bad "'$t': no such test file"
  fi
done

if [[ -z $out ]]; then
  out=$(mktemp -d /tmp/flaky.XXXXXX) || exit 1
else
  mkdir -p "$out" || exit 1
fi

loops=() run_pid="" summary=() stopped=""
declare -A fails=() done_runs=()
exec 3>&2 4>&1  # the script's stderr and stdout, also while a run's output goes to its log
stop_loops() {
  if ((${#loops[@]})); then
    kill "${loops[@]}" 2>/dev/null
    wait "${loops[@]}" 2>/dev/null
    loops=()
  fi
}
interrupted() {
  # the run (make, pytest, its jobs: a process group of their own) gets the Ctrl-C as
  # from a terminal, so that pytest ends its jobs and fixtures (a virtual cluster: down)
  if [[ -n $run_pid ]]; then
    kill -INT -- "-$run_pid" 2>/dev/null
    wait "$run_pid" 2>/dev/null
  fi
  stop_loops
  echo "tests/flaky.sh: interrupted; output in $out" >&3
  stopped=" that ended"
  report >&4  # the runs that ended
  exit 130
}
report() {
  # every run's result, then every test that failed with how often, of the runs of
  # its MPI that ended; status 0 if none failed, else 1
  echo
  echo "MPI       run      s  result"
  printf '%s\n' "${summary[@]}"
  echo
  if ((${#fails[@]} == 0)); then
    echo "no test failed in the ${runs} run(s) per MPI${stopped} under ${load} busy loop(s)"
    return 0
  fi
  echo "failed  of  MPI       test"
  for k in "${!fails[@]}"; do
    printf '%6d %3d  %-9s %s\n' "${fails[$k]}" "${done_runs[${k%% *}]:-0}" "${k%% *}" "${k#* }"
  done | sort -k3,3 -k1,1nr -k4
  return 1
}
in_group() {
  # the command in a process group of its own (job control on) that takes SIGINT (a
  # script's background commands otherwise ignore it); waited for so that a signal to
  # this script is handled at once
  set -m
  "$@" </dev/null &
  run_pid=$!
  set +m
  wait "$run_pid"
  local rc=$?
  run_pid=""
  return $rc
}
trap stop_loops EXIT
trap interrupted INT TERM
for ((i = 0; i < load; i++)); do
  sh -c 'while :; do :; done' &
  loops+=($!)
done

args=(-p no:cacheprovider -rfE)
[[ -n $kexpr ]] && args+=(-k "$kexpr")
echo "tests/flaky.sh: ${runs} run(s) per MPI (${mpis}), ${load} busy loop(s) on" \
  "${cores} cores"
echo "output in $out"
echo "tests: ${tests[*]}" | fold -s -w 78
[[ -n $kexpr ]] && echo "-k: $kexpr"

for m in "${mpi_list[@]}"; do
  if ! in_group make --no-print-directory build MPI="$m" >"$out/$m-build.log" 2>&1; then
    echo "tests/flaky.sh: make build MPI=$m failed: $out/$m-build.log" >&2
    exit 1
  fi
  for ((r = 1; r <= runs; r++)); do
    log=$out/$m-$r.log
    t0=$(date +%s)
    in_group make --no-print-directory _test MPI="$m" TESTS="${tests[*]@Q}" \
      PYTEST_ARGS="${args[*]@Q}" >"$log" 2>&1
    rc=$?
    secs=$(($(date +%s) - t0))
    # pytest's short summary: "FAILED id - message", "ERROR id - message"
    mapfile -t bad_ids < <(sed -n 's/^\(FAILED\|ERROR\) \(.*\)$/\2/p' "$log" | sed 's/ - .*//' | sort -u)
    if ((rc != 0 && ${#bad_ids[@]} == 0)); then
      bad_ids=("(make _test ended with status $rc: $log)")
    fi
    for id in "${bad_ids[@]}"; do
      fails["$m ${id}"]=$((${fails["$m ${id}"]:-0} + 1))
    done
    line=$(grep -E '^[=]* ?[0-9]+ (passed|failed|error|skipped|deselected)' "$log" | tail -n 1 |
      tr -d '=' | sed 's/^ *//; s/ in [0-9.]*s.*//')
    summary+=("$(printf '%-9s %3d %6d  %s' "$m" "$r" "$secs" "${line:-no summary (status $rc)}")")
    printf '%-9s run %d of %d: %s (%d s)\n' "$m" "$r" "$runs" "${line:-no summary (status $rc)}" "$secs"
    done_runs[$m]=$r
  done
done
stop_loops
report
exit $?
