#!/usr/bin/env bash
# A real single-node Apache Kafka broker (KRaft, broker+controller in one JVM) for local
# development and tests, with no Docker: jars come from Maven Central through pom.xml.
#
#   tools/kafka/kafka.sh fetch    resolve the jars into the cache (once per version)
#   tools/kafka/kafka.sh start    start the broker, or reuse the one already running
#   tools/kafka/kafka.sh stop     stop it cleanly (SIGTERM, then SIGKILL after a grace period)
#   tools/kafka/kafka.sh status   exit 0 when a broker answers on the port
#   tools/kafka/kafka.sh owned    exit 0 when the broker on the port is the one this script started
#   tools/kafka/kafka.sh reset    stop and delete the broker's data
#   tools/kafka/kafka.sh format [id]  format the (empty) storage with a cluster id, new by default
#   tools/kafka/kafka.sh cluster-id [N]   print a new cluster id (N of them, one a line)
#   tools/kafka/kafka.sh version      print the Kafka version this script runs
#
# Environment: KAFKA_VERSION (pom.xml's, 4.3.1; 3.9.1 runs the 3.9 line), KAFKA_PORT (9092),
# KAFKA_CONTROLLER_PORT (9093), KAFKA_HEAP_MAX (512m), KAFKA_STATE_DIR (<repo>/.cache/kafka/<version>),
# KAFKA_LIBS_DIR, KAFKA_START_TIMEOUT (seconds, 90).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
version="${KAFKA_VERSION:-$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")}"
major="${version%%.*}"
# One state dir per version by default: a log dir formatted by Kafka 4 is not readable by 3.9.
state="${KAFKA_STATE_DIR:-$repo/.cache/kafka/$version}"
# Jars are shared by every state dir (a second broker for a fault test fetches nothing).
libs="${KAFKA_LIBS_DIR:-$repo/.cache/kafka/libs-$version}"
run="$state/run"
data="$state/data"
pidfile="$run/kafka.pid"
logfile="$run/server.log"
port="${KAFKA_PORT:-9092}"
ctrl_port="${KAFKA_CONTROLLER_PORT:-9093}"
heap_max="${KAFKA_HEAP_MAX:-512m}"
start_timeout="${KAFKA_START_TIMEOUT:-90}"

say() { printf '[kafka] %s\n' "$*" >&2; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

our_pid() {
  [[ -f "$pidfile" ]] || return 1
  local pid
  pid="$(cat "$pidfile")"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

fetch() {
  if [[ -f "$libs/.complete" ]]; then return 0; fi
  command -v mvn >/dev/null || { say "Maven (mvn) is required to fetch Kafka $version"; exit 1; }
  command -v java >/dev/null || { say "Java is required to run Kafka"; exit 1; }
  say "fetching Kafka $version jars from Maven Central into $libs"
  mkdir -p "$(dirname "$libs")"
  rm -rf "$libs.tmp"
  mvn -q -B -Dstyle.color=never -f "$here/pom.xml" "-Dkafka.version=$version" "-Pkafka-$major" \
    dependency:copy-dependencies -DoutputDirectory="$libs.tmp" -DincludeScope=runtime
  rm -rf "$libs"
  mv "$libs.tmp" "$libs"
  touch "$libs/.complete"
}

write_config() {
  mkdir -p "$run" "$data"
  cat >"$run/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$ctrl_port
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$ctrl_port
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$data
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
# Topics are created by the services with explicit partition counts.
auto.create.topics.enable=false
log.cleaner.dedupe.buffer.size=16777216
log.retention.hours=168
PROPS
  # The same logging either way: INFO into server.log, where start() waits for "Kafka Server
  # started" (KafkaRaftServer logs it), and WARN for the rest of Kafka.
  if ((major >= 4)); then
    # Kafka 4 reads only a Log4j 2 configuration; given a log4j 1 file it logs nothing there.
    cat >"$run/log4j2.properties" <<PROPS
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
appender.file.type=File
appender.file.name=file
appender.file.fileName=$logfile
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
logger.kafka.name=org.apache.kafka
logger.kafka.level=WARN
logger.raftserver.name=kafka.server.KafkaRaftServer
logger.raftserver.level=INFO
logger.statechange.name=state.change.logger
logger.statechange.level=WARN
PROPS
  else
    cat >"$run/log4j.properties" <<PROPS
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$logfile
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka=WARN
log4j.logger.kafka.server.KafkaRaftServer=INFO
log4j.logger.state.change.logger=WARN
PROPS
  fi
}

java_cmd() {
  local logging="-Dlog4j.configuration=file:$run/log4j.properties"
  ((major >= 4)) && logging="-Dlog4j2.configurationFile=$run/log4j2.properties"
  java -Xms128m "-Xmx$heap_max" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError \
    -Djava.awt.headless=true "$logging" -cp "$libs/*" "$@"
}

# A KRaft cluster id: 16 random bytes, base64url without padding (Kafka's Uuid form). It never
# begins with '-' or '_': such an id looks like an option to a command line (Kafka's own
# random-uuid avoids a leading '-' for the same reason).
new_cluster_id() {
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
    [[ "$id" == [A-Za-z0-9]* ]] && break
  done
  printf '%s\n' "$id"
}

# `--cluster-id=<id>` is one argument: the id is never read as an option, whatever it begins with.
format_storage() {
  fetch
  write_config
  java_cmd kafka.tools.StorageTool format "--cluster-id=$1" -c "$run/server.properties" --ignore-formatted >/dev/null
}

start() {
  local pid
  if pid="$(our_pid)" && port_open "$port"; then
    say "reusing the running broker (pid $pid) on 127.0.0.1:$port"
    return 0
  fi
  if port_open "$port"; then
    say "a broker already answers on 127.0.0.1:$port (not started by this script); reusing it"
    return 0
  fi
  fetch
  write_config
  if [[ ! -f "$data/meta.properties" ]]; then format_storage "$(new_cluster_id)"; fi
  : >"$logfile"
  say "starting Kafka $version on 127.0.0.1:$port (heap max $heap_max, logs in $logfile)"
  # setsid: the broker gets its own session, so a Ctrl-C meant for a foreground dev stack does
  # not kill it mid-write; the stack stops it through `stop`.
  setsid nohup bash -c "$(declare -f java_cmd); heap_max='$heap_max' run='$run' libs='$libs' major='$major' java_cmd kafka.Kafka '$run/server.properties'" \
    >>"$run/stdout.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  local started=$SECONDS
  until grep -q 'Kafka Server started' "$logfile" 2>/dev/null && port_open "$port"; do
    if ! our_pid >/dev/null; then
      say "the broker exited during start-up; last lines of its logs:"
      tail -n 40 "$logfile" "$run/stdout.log" >&2 || true
      rm -f "$pidfile"
      exit 1
    fi
    if (( SECONDS - started > start_timeout )); then
      say "the broker did not answer within ${start_timeout}s; stopping it"
      stop
      exit 1
    fi
    sleep 0.3
  done
  say "ready on 127.0.0.1:$port after $((SECONDS - started))s (pid $(cat "$pidfile"))"
}

stop() {
  local pid
  if ! pid="$(our_pid)"; then
    rm -f "$pidfile"
    say "not running"
    return 0
  fi
  say "stopping the broker (pid $pid)"
  # The pid is the bash wrapper's; signal the whole session so the JVM gets SIGTERM too.
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  local waited=0
  while kill -0 "$pid" 2>/dev/null || pgrep -s "$pid" >/dev/null 2>&1; do
    if (( waited >= 300 )); then
      say "still running after 30s; killing it"
      kill -KILL -- "-$pid" 2>/dev/null || true
      break
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  rm -f "$pidfile"
  say "stopped"
}

case "${1:-}" in
  fetch) fetch ;;
  start) start ;;
  stop) stop ;;
  status)
    if port_open "$port"; then say "up on 127.0.0.1:$port"; else say "down"; exit 1; fi
    ;;
  owned) our_pid >/dev/null && port_open "$port" ;;
  version) printf '%s\n' "$version" ;;
  reset) stop; rm -rf "$data" "$run"; say "data removed" ;;
  format) format_storage "${2:-$(new_cluster_id)}" ;;
  cluster-id) for _ in $(seq 1 "${2:-1}"); do new_cluster_id; done ;;
  *) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
