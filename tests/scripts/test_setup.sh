#!/usr/bin/env bash
# scripts/setup against stand-in dpkg-query / apt-get / id / sudo / nvcc programs: as root and as
# a user, with packages missing, installed, half-removed, and with apt-get failing. Nothing is
# installed for real. Usage: test_setup.sh <path to scripts/setup>
set -uo pipefail
setup=$(realpath "${1:?usage: test_setup.sh <path to scripts/setup>}")
work=$(mktemp -d)
trap '[ -n "${KEEP_WORK-}" ] || rm -rf "$work"' EXIT
passed=0
failed=0

# A bin folder holding only the stand-ins and the real tools the script itself needs, so a real
# sudo / apt-get / nvcc on this machine can never be reached. Options: "nosudo", "nodpkg",
# "nonvcc".
make_bin() {
  local bin=$work/bin.$1 tool
  rm -rf "$bin"
  mkdir -p "$bin"
  for tool in bash env cat grep; do ln -s "$(command -v $tool)" "$bin/$tool"; done
  # dpkg-query -W -f='${Status}' PKG: "install ok installed" for each package in $FAKE_INSTALLED,
  # "deinstall ok config-files" for those in $FAKE_REMOVED, unknown (exit 1) otherwise
  cat >"$bin/dpkg-query" <<'STUB'
#!/usr/bin/env bash
pkg=${!#}
case " $FAKE_INSTALLED " in *" $pkg "*) printf 'install ok installed'; exit 0 ;; esac
case " ${FAKE_REMOVED-} " in *" $pkg "*) printf 'deinstall ok config-files'; exit 0 ;; esac
echo "dpkg-query: no packages found matching $pkg" >&2
exit 1
STUB
  # dpkg -s PKG, answering from the same lists
  cat >"$bin/dpkg" <<'STUB'
#!/usr/bin/env bash
[ "$1" = -s ] || exit 2
pkg=$2
case " $FAKE_INSTALLED " in *" $pkg "*) echo "Status: install ok installed"; exit 0 ;; esac
case " ${FAKE_REMOVED-} " in *" $pkg "*) echo "Status: deinstall ok config-files"; exit 0 ;; esac
echo "dpkg-query: package '$pkg' is not installed" >&2
exit 1
STUB
  # apt-get: records how it was called (and what DEBIAN_FRONTEND it saw); fails on request
  cat >"$bin/apt-get" <<'STUB'
#!/usr/bin/env bash
echo "apt-get DEBIAN_FRONTEND=${DEBIAN_FRONTEND-unset} $*" >>"$FAKE_LOG"
[ "${FAKE_APT_FAIL-}" = "$1" ] && { echo "E: stand-in failure" >&2; exit 100; }
exit 0
STUB
  printf '#!/usr/bin/env bash\n[ "$1" = -u ] && echo "$FAKE_UID"\n' >"$bin/id"
  printf '#!/usr/bin/env bash\necho "sudo $*" >>"$FAKE_LOG"\nexec "$@"\n' >"$bin/sudo"
  printf '#!/usr/bin/env bash\necho "nvcc stand-in"\n' >"$bin/nvcc"
  # python3 -c "import venv, ensurepip": fails when $FAKE_NO_VENV is set
  printf '#!/usr/bin/env bash\n[ -z "${FAKE_NO_VENV-}" ]\n' >"$bin/python3"
  chmod +x "$bin"/*
  case " ${2-} " in *" nosudo "*) rm "$bin/sudo" ;; esac
  case " ${2-} " in *" nodpkg "*) rm "$bin/dpkg" "$bin/dpkg-query" ;; esac
  case " ${2-} " in *" nonvcc "*) rm "$bin/nvcc" ;; esac
  echo "$bin"
}

all="cmake ninja-build g++ libgtest-dev nlohmann-json3-dev libcli11-dev"
# run_setup NAME BIN [VAR=VALUE...] -- [ARGS...]: sets $rc, $out (stdout+stderr), $log
run_setup() {
  local name=$1 bin=$2
  shift 2
  local vars=()
  while (($#)) && [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  log=$work/$name.log
  : >"$log"
  out=$(env -i PATH="$bin" HOME="$work" FAKE_LOG="$log" FAKE_UID=0 FAKE_INSTALLED="$all" \
        CUDA_HOME="$work/no-cuda" "${vars[@]}" "$setup" "$@" 2>&1)
  rc=$?
}
expect() {  # expect NAME CONDITION-DESCRIPTION TEST...
  local name=$1 what=$2
  shift 2
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name: $what"
    echo "  exit $rc; output:"; sed 's/^/    /' <<<"$out"
    echo "  calls:"; sed 's/^/    /' "$log"
  fi
}
has() { grep -qF -- "$1" <<<"$2"; }
has_line() { grep -qxF -- "$1" "$2"; }

bin=$(make_bin plain)

# 1. root, two packages missing: apt-get update + install them, DEBIAN_FRONTEND set, no sudo
run_setup root "$bin" FAKE_INSTALLED="cmake ninja-build g++ libgtest-dev" --
expect root "exit 0" test $rc -eq 0
expect root "apt-get update as root" \
  has_line "apt-get DEBIAN_FRONTEND=noninteractive update -qq" "$log"
expect root "installs exactly the missing packages" has_line \
  "apt-get DEBIAN_FRONTEND=noninteractive install -y -qq --no-install-recommends nlohmann-json3-dev libcli11-dev" "$log"
expect root "no sudo as root" bash -c "! grep -q '^sudo' '$log'"
expect root "names what it installs" has "installing nlohmann-json3-dev libcli11-dev" "$out"

# 2. a user with sudo: the same through sudo
run_setup user "$bin" FAKE_UID=1000 FAKE_INSTALLED="cmake" --
expect user "exit 0" test $rc -eq 0
expect user "sudo runs env + apt-get install" has_line \
  "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ninja-build g++ libgtest-dev nlohmann-json3-dev libcli11-dev" "$log"
expect user "apt-get sees DEBIAN_FRONTEND through sudo" \
  has_line "apt-get DEBIAN_FRONTEND=noninteractive update -qq" "$log"

# 3. a user without sudo: a clear refusal, nothing run
run_setup nosudo "$(make_bin nosudo nosudo)" FAKE_UID=1000 FAKE_INSTALLED="" --
expect nosudo "exit 1" test $rc -eq 1
expect nosudo "says sudo is missing and what to run" has "sudo not found" "$out"
expect nosudo "apt-get not run" test ! -s "$log"

# 4. everything present: nothing installed, exit 0
run_setup present "$bin" --
expect present "exit 0" test $rc -eq 0
expect present "apt-get not run" test ! -s "$log"

# 5. a package removed with its configuration kept counts as missing
run_setup removed "$bin" FAKE_INSTALLED="cmake ninja-build g++ libgtest-dev libcli11-dev" \
  FAKE_REMOVED="nlohmann-json3-dev" --
expect removed "reinstalls the half-removed package" has_line \
  "apt-get DEBIAN_FRONTEND=noninteractive install -y -qq --no-install-recommends nlohmann-json3-dev" "$log"

# 6. apt-get failing: exit 1, named
run_setup aptfail "$bin" FAKE_INSTALLED="" FAKE_APT_FAIL=install --
expect aptfail "exit 1" test $rc -eq 1
expect aptfail "says apt-get failed" has "apt-get could not install" "$out"

# 7. bad usage: exit 2 with the usage line
run_setup badarg "$bin" -- --bogus
expect badarg "exit 2" test $rc -eq 2
expect badarg "names the argument" has "unknown argument '--bogus'" "$out"
run_setup twoargs "$bin" -- --check --check
expect twoargs "exit 2" test $rc -eq 2

# 8. --check: lists what is missing, installs nothing
run_setup check "$bin" FAKE_INSTALLED="cmake" -- --check
expect check "exit 1 when something is missing" test $rc -eq 1
expect check "lists the missing packages" \
  has "missing ninja-build g++ libgtest-dev nlohmann-json3-dev libcli11-dev" "$out"
expect check "apt-get not run" test ! -s "$log"
run_setup checkok "$bin" -- --check
expect checkok "exit 0 when all are present" test $rc -eq 0

# 9. not a Debian system
run_setup nodpkg "$(make_bin nodpkg nodpkg)" --
expect nodpkg "exit 1" test $rc -eq 1
expect nodpkg "says it needs dpkg" has "dpkg not found" "$out"

# 10. a python3 without venv / ensurepip (Debian's without python3-venv): installed with it
run_setup novenv "$bin" FAKE_NO_VENV=1 --
expect novenv "installs python3-venv" has_line \
  "apt-get DEBIAN_FRONTEND=noninteractive install -y -qq --no-install-recommends python3-venv" "$log"

# 11. no CUDA toolkit: named, exit 1; found through CUDA_HOME when not on PATH
nonvcc=$(make_bin nonvcc nonvcc)
run_setup nonvcc "$nonvcc" --
expect nonvcc "exit 1" test $rc -eq 1
expect nonvcc "says nvcc is missing" has "nvcc not found" "$out"
mkdir -p "$work/cuda/bin"
printf '#!/usr/bin/env bash\n' >"$work/cuda/bin/nvcc"
chmod +x "$work/cuda/bin/nvcc"
run_setup cudahome "$nonvcc" CUDA_HOME="$work/cuda" --
expect cudahome "exit 0 with nvcc in CUDA_HOME" test $rc -eq 0

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
