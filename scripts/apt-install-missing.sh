# Sourced by install-deps.sh and build-perf612.sh: installs, as root, the Debian packages of a
# list that are not installed yet; does nothing (and no network work) when all are.
#   apt_install_missing WHO PACKAGE...   (WHO prefixes the messages)
apt_install_missing() {
  local who=$1 p
  shift
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "$who: missing packages (${missing[*]}) and not root; run as root" >&2
    exit 1
  fi
  echo "$who: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
