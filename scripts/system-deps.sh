#!/usr/bin/env bash
# Debian packages the apps need, installed only when missing and only when run as root.
#   - PostgreSQL server binaries (initdb, pg_ctl, postgres) for the query-optimizer app
#   - PostgreSQL server headers (PGXS) for the pg_qopt plugin
#   - a Java runtime for Spark SQL (the query-optimizer app's second engine), when no java is found
# Installed before any server starts: upgrading the server package under a running server breaks it.
set -u
need=()
bindir=$(pg_config --bindir 2>/dev/null || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then need+=(postgresql); fi
fi
inc=$(pg_config --includedir-server 2>/dev/null || true)
if [ -z "$inc" ] || [ ! -f "$inc/postgres.h" ]; then
  ver=$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -n1)
  need+=("postgresql-server-dev-${ver:-all}")
fi
if [ -z "${JAVA_HOME:-}" ] && ! command -v java >/dev/null 2>&1; then
  need+=(openjdk-17-jre-headless)
fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "note: missing Debian packages: ${need[*]} (not root, so not installing)."
  echo "      install them with: sudo apt-get install -y ${need[*]}"
  exit 0
fi
echo "installing Debian packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq "${need[@]}" >/dev/null \
  || echo "warning: apt-get install ${need[*]} failed; the apps that need them will say so"
exit 0
