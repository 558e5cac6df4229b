#!/usr/bin/env bash
# A PostgreSQL server of its own for kiln, in a directory, on a loopback port: what the tests, the
# sweep and `make cluster` start. Debian's postgresql package provides the programs; initdb refuses
# to run as root, so as root every program runs as the `postgres` user and the directory is its own.
#
#   scripts/postgres.sh init    DIR PORT             # a new primary: initdb, loopback only, trust auth,
#                                                    # ready to stream to standbys; starts it
#   scripts/postgres.sh standby DIR PORT PRIMARY_PORT  # a hot standby of the primary on PRIMARY_PORT
#                                                    # (pg_basebackup -R), started
#   scripts/postgres.sh start   DIR                  # start a server initialised before
#   scripts/postgres.sh stop    DIR [fast|immediate] # stop it (immediate: as a crash would)
#   scripts/postgres.sh promote DIR                  # make a standby the primary (pg_ctl promote)
#   scripts/postgres.sh url     DIR                  # print the JDBC URL of the server in DIR
#   scripts/postgres.sh bindir                       # print where the PostgreSQL programs are
#
# Every server: database `kiln`, user `kiln` (trust on 127.0.0.1 only), its log in DIR/server.log.
# As root, DIR's parent directories must be open to the postgres user (/tmp is; /root is not).
set -euo pipefail

usage() {
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

bindir() {
  local d
  if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
    pg_config --bindir
    return
  fi
  for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V -r); do
    if [ -x "$d/initdb" ]; then echo "$d"; return; fi
  done
  echo "postgres.sh: no PostgreSQL server programs found: apt-get install postgresql" >&2
  exit 1
}

BIN=""
# as root, the server's programs run as the postgres user (initdb and postgres refuse root)
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || { echo "postgres.sh: running as root needs the 'postgres' user (apt-get install postgresql creates it)" >&2; exit 1; }
    (cd / && runuser -u postgres -- "$@")  # from /: the caller's directory may be closed to postgres
  else
    "$@"
  fi
}

own_dir() {
  mkdir -p "$1"
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$1"; fi
  chmod 700 "$1"
}

port_of() {
  sed -n "s/^port = \([0-9]*\).*/\1/p" "$1/postgresql.auto.conf" "$1/postgresql.conf" 2>/dev/null | tail -1
}

start() {
  as_owner "$BIN/pg_ctl" -D "$1" -l "$1/server.log" -w -t 60 start >/dev/null
}

configure() {  # DIR PORT: settings of every kiln server, primary or standby
  as_owner tee -a "$1/postgresql.conf" >/dev/null <<EOF
# kiln (scripts/postgres.sh)
port = $2
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
max_connections = 200
wal_level = replica
max_wal_senders = 4
hot_standby = on
hot_standby_feedback = on
fsync = on
synchronous_commit = on
EOF
}

cmd="${1:-}"
[ -n "$cmd" ] || usage
shift
BIN="$(bindir)"
case "$cmd" in
  bindir)
    echo "$BIN"
    ;;
  init)
    [ $# -eq 2 ] || usage
    dir="$1"; port="$2"
    if [ -e "$dir/PG_VERSION" ]; then echo "postgres.sh: $dir holds a server already (start it, or remove it)" >&2; exit 1; fi
    own_dir "$dir"
    as_owner "$BIN/initdb" -D "$dir" -U kiln --auth=trust --encoding=UTF8 --locale=C >"$dir.initdb.log" 2>&1 \
      || { cat "$dir.initdb.log" >&2; exit 1; }
    rm -f "$dir.initdb.log"
    configure "$dir" "$port"
    as_owner tee "$dir/pg_hba.conf" >/dev/null <<EOF
# kiln (scripts/postgres.sh): loopback only, no password
host all         kiln 127.0.0.1/32 trust
host replication kiln 127.0.0.1/32 trust
EOF
    start "$dir"
    as_owner "$BIN/psql" -h 127.0.0.1 -p "$port" -U kiln -d postgres -q -c "CREATE DATABASE kiln" >/dev/null
    ;;
  standby)
    [ $# -eq 3 ] || usage
    dir="$1"; port="$2"; primary="$3"
    if [ -e "$dir/PG_VERSION" ]; then echo "postgres.sh: $dir holds a server already" >&2; exit 1; fi
    own_dir "$dir"
    as_owner "$BIN/pg_basebackup" -h 127.0.0.1 -p "$primary" -U kiln -D "$dir" -R -X stream -c fast
    # the primary's settings came with the copy: this server's own replace them
    as_owner sed -i "/^# kiln (scripts\/postgres.sh)\$/,\$d" "$dir/postgresql.conf"
    configure "$dir" "$port"
    start "$dir"
    ;;
  start)
    [ $# -eq 1 ] || usage
    start "$1"
    ;;
  stop)
    [ $# -ge 1 ] || usage
    if [ -e "$1/postmaster.pid" ]; then as_owner "$BIN/pg_ctl" -D "$1" -m "${2:-fast}" -w stop >/dev/null; fi
    ;;
  promote)
    [ $# -eq 1 ] || usage
    as_owner "$BIN/pg_ctl" -D "$1" -w promote >/dev/null
    ;;
  url)
    [ $# -eq 1 ] || usage
    echo "jdbc:postgresql://127.0.0.1:$(port_of "$1")/kiln?user=kiln"
    ;;
  *)
    usage
    ;;
esac
