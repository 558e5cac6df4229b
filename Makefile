# kiln — `make demo` starts a front end over a populated LMDB database; `make test` runs every test.
# Prerequisites (Debian/Ubuntu): sudo apt-get install -y openjdk-17-jdk-headless maven make

SHELL := /bin/bash
.DEFAULT_GOAL := help

SERVER ?= kilim
PORT   ?= 8080
BIND   ?= 0.0.0.0
DATA   ?= data
# A PostgreSQL database to serve from instead of LMDB in $(DATA): postgresql://USER@HOST:PORT/DATABASE (docs/scaling.md)
DB     ?=
# DB as make prints it: without its password (the command line that holds it is not echoed)
DB_SHOWN = $(shell printf '%s' '$(DB)' | sed -E 's#(//[^/:@]*:)[^@/]*@#\1***@#; s#(password=)[^&]*#\1***#')
# A main class to run instead of the demo's: an in-tree example, from the jar of SERVER's examples module
# (examples-kilim: kiln.kilim.example.HitCounter; SERVER=loom, examples-loom: kiln.loom.example.*).
# Your own app lives in its own project: make new-app.
APP    ?=
# The heap's ceiling (-Xmx); empty: deploy/jvm.options' own (256m, for a 1 GB VPS: it starts at 16 MB and
# grows only as the server needs, leaving the rest to LMDB's page cache and the OS).
HEAP   ?=
# More server options for make demo, with or without APP, e.g. ARGS="--threads 2 --blocked-carrier-ms 50"
# (docs/operations.md lists them; the jar's --help too).
ARGS   ?=
MVN    ?= mvn -B -q

# lmdbjava needs these on JDK 17+ (see README, "JVM flags").
LMDB_FLAGS := --add-opens java.base/java.nio=ALL-UNNAMED --add-exports java.base/sun.nio.ch=ALL-UNNAMED
JAVA       ?= java
# Every front end starts with deploy/jvm.options (a Java argument file: the collector, the JIT, the
# heap, lmdbjava's flags; docs/operations.md, "JVM flags"), as ./ab-sweep.sh and the systemd unit do.
JVM_OPTIONS ?= deploy/jvm.options
JAVA_FLAGS := @$(JVM_OPTIONS) $(if $(HEAP),-Xmx$(HEAP))
HEAP_MAX    = $(or $(HEAP),$(shell sed -n 's/^-Xmx//p' $(JVM_OPTIONS)))

# Front ends come from frontends.conf (one line each: name, module, jar, jdk, ..., args).
FRONTENDS := frontends.conf
SERVER_NAMES := $(shell awk '!/^\#/ && NF {print $$1}' $(FRONTENDS))
# fe_field NAME,COLUMN: one column of a front end's line
fe_field = $(shell awk -v n='$(1)' '!/^\#/ && $$1 == n {print $$$(2)}' $(FRONTENDS))
MODULE = $(call fe_field,$(SERVER),2)
JAR    = $(if $(MODULE),$(MODULE)/target/$(call fe_field,$(SERVER),3))
# APP's module and jar: SERVER's examples (examples-kilim, examples-loom), rebuilt as a front end's jar is.
APP_MODULE = $(if $(APP),examples-$(SERVER))
APP_JAR    = $(if $(APP),$(APP_MODULE)/target/kiln-$(APP_MODULE).jar)
EXAMPLE_SERVERS := $(patsubst examples-%,%,$(wildcard examples-*))
EXAMPLE_JARS    := $(foreach s,$(EXAMPLE_SERVERS),examples-$(s)/target/kiln-examples-$(s).jar)
FRONTEND_ARGS = $(shell awk -v n='$(SERVER)' '!/^\#/ && $$1 == n {$$1=$$2=$$3=$$4=$$5=$$6=""; sub(/^ +/, ""); print}' $(FRONTENDS))
# The java that runs SERVER: $(JAVA) when its JDK range allows, else a fitting JDK under /usr/lib/jvm
# (scripts/find-java.sh). When none fits, $(JAVA) runs it and the server names the JDK it needs.
SERVER_JAVA = $(or $(shell JAVA=$(JAVA) scripts/find-java.sh $(call fe_field,$(SERVER),4) 2>/dev/null),$(JAVA))
# JDK 22+ warns on stderr about lmdbjava's native access, 23+ about its sun.misc.Unsafe use, unless allowed.
NEW_JDK_FLAGS = $(shell v=$$($(SERVER_JAVA) -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p'); \
  if [ "$${v:-0}" -ge 23 ]; then echo --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow; \
  elif [ "$${v:-0}" -ge 22 ]; then echo --enable-native-access=ALL-UNNAMED; fi)
# A jar is rebuilt when any main source or pom changed since it was made.
MAIN_SOURCES := $(shell find . \( -path ./conformance -o -path ./starter \) -prune -o \( -path '*/src/main/*' -o -name pom.xml \) -type f -print 2>/dev/null)

# The modules whose javadoc is the API reference (make docs): the database and its engines, the HTTP
# layer, the pipeline, the two front ends an app is written on. Not the demo, the library front ends
# (a main class each), the examples, tests or benchmarks.
API_MODULES := db,db-lmdb,db-postgresql,http,server,http-kilim,http-loom

.PHONY: help build install docs new-app demo backup cluster cluster-stop test powercut bench-db bench-feeds bench-parser bench-memory bench-traps bench-hostile clean check-server check-app

help:
	@echo "make demo [SERVER=$(SERVER_NAMES)] [PORT=8080] [DATA=data] [HEAP=256m] [ARGS=\"--threads 2\"]   build if needed and start a server"
	@echo "make demo DB=postgresql://kiln@127.0.0.1:5432/kiln   the same over PostgreSQL instead of LMDB (docs/scaling.md)"
	@echo "make demo APP=kiln.kilim.example.TodoApp   build and run an in-tree example instead of the demo (examples-kilim/; SERVER=loom: kiln.loom.example.*)"
	@echo "make demo ARGS=\"--app board\"              the message board example (docs/data.md) on any SERVER="
	@echo "make install                               put kiln's artifacts (with sources and javadoc jars) and its Kilim weaver plugin into ~/.m2 (tests skipped)"
	@echo "make docs                                  the API reference (javadoc of kiln.db, kiln.http, kiln.server, kiln.kilim, kiln.loom...) in target/site/apidocs"
	@echo "make new-app DIR=../myapp [KIND=loom]      a new app of your own in DIR, on Kilim fibers (or virtual threads); then: cd DIR && make run"
	@echo "make backup TO=DIR [DATA=data]             compacted copy of the database into DIR/data.mdb (also while a server runs)"
	@echo "./kiln db stat|get|range|dump|load|copy|verify URL ...   see and move a database, LMDB or PostgreSQL (./kiln db --help; docs/operations.md)"
	@echo "make cluster [SERVER=kilim] [PORT=8080]     PostgreSQL primary + standby under Patroni (failover on its own), two servers, nginx in front (docs/scaling.md);"
	@echo "             [JAR=your-app.jar]            JAR: your own app's jar instead (its main takes kiln's flags, as make new-app's)"
	@echo "make cluster-stop                          stop all of it (the data stays in ./$(CLUSTER_DIR))"
	@echo "make test                                  run every test (unit, database, HTTP conformance, nginx, the API reference, sweep)"
	@echo "make powercut [CUTS=20] [NOSYNC=1]          power cuts under a load of durable writes, each followed by checks of the reopened database (needs FUSE)"
	@echo "make build                                 build every runnable jar (skips tests)"
	@echo "make bench-db [BASELINE=REV ROUNDS=5]      database micro-benchmarks (prints a table); BASELINE: against REV's kiln-db side by side"
	@echo "make bench-db ONLY=model                   only the data model (point read, pages, index, writes) beside raw lmdbjava (~1 min)"
	@echo "make bench-feeds                           CPU per commit to one room while 0..10,000 subscribers follow others: prefix feeds vs a filtered table feed; the writer thread's share"
	@echo "make bench-parser                          kiln's parser: a request trickled one byte per read, resumed vs re-parsed"
	@echo "make bench-memory [CONNECTIONS=19500]      heap and RSS bytes per idle keep-alive connection, every front end beside dummy, nginx and netty (prints a table)"
	@echo "make bench-traps                           other requests' round trips while a Kilim handler blocks or spins, with and without the carrier hand-off"
	@echo "make bench-hostile [SERVER=kilim]          5,000 partial bodies, then 20,000 heads only, against SERVER with make demo's defaults (~1 min)"
	@echo "make clean                                 remove build output (keeps ./$(DATA))"

check-server:
	@if [ -z "$(JAR)" ]; then echo "make: unknown SERVER '$(SERVER)'; choose one of: $(SERVER_NAMES) (frontends.conf)" >&2; exit 2; fi

check-app:
	@if [ -n "$(APP)" ] && [ ! -d "$(APP_MODULE)" ]; then echo "make: no in-tree examples for SERVER '$(SERVER)' (no $(APP_MODULE)/); APP= runs with one of: $(EXAMPLE_SERVERS)" >&2; exit 2; fi

build:
	$(MVN) -DskipTests package

# kiln's artifacts (version: the root pom's) with their sources and javadoc jars (an IDE shows the
# docs), and the Kilim weaver plugin, into the local Maven repository, for apps built outside this
# tree (make new-app). `make test` installs them too, without sources and javadoc.
install:
	$(MVN) -DskipTests -Pdocs install

# The API reference: one javadoc site of API_MODULES' packages in target/site/apidocs (the demo's
# module is there for the demo mains' imports; its packages are left out by the root pom), failing on any
# javadoc warning; then scripts/check-api-docs.py, which fails when a type or member the guides name has
# no doc comment. Maven's own output goes to target/docs.log; on a failure its warnings are printed.
docs:
	@rm -rf target/site/apidocs && mkdir -p target
	@mvn -B --no-transfer-progress -pl .,$(API_MODULES),demo javadoc:aggregate > target/docs.log 2>&1 \
	  || { grep -E 'warning:|error:|\[ERROR\] [^ ]' target/docs.log >&2; echo "make docs: javadoc failed, target/docs.log has the whole output" >&2; exit 1; }
	scripts/check-api-docs.py target/site/apidocs README.md docs/*.md
	@echo "The API reference: target/site/apidocs/index.html"

KIND ?= kilim
new-app:
	@if [ -z "$(DIR)" ]; then echo "make new-app: give DIR=../myapp, a new directory (KIND=kilim or loom)" >&2; exit 2; fi
	scripts/new-app.sh $(KIND) $(DIR)

$(JAR): $(MAIN_SOURCES)
	$(MVN) -DskipTests -pl $(MODULE) -am package

$(EXAMPLE_JARS): $(MAIN_SOURCES)
	$(MVN) -DskipTests -pl $(firstword $(subst /, ,$@)) -am package

demo: check-server check-app $(or $(APP_JAR),$(JAR))
	@echo "Starting $(or $(APP),kiln ($(SERVER))) on http://$(BIND):$(PORT)/ with $(if $(DB),the database $(DB_SHOWN),data in $(DATA)), heap up to $(HEAP_MAX). Ctrl-C stops it cleanly."
	@$(if $(APP),true,echo "  try: curl http://127.0.0.1:$(PORT)/db    curl 'http://127.0.0.1:$(PORT)/updates?queries=5'")
	$(if $(DB),@)exec $(SERVER_JAVA) $(JAVA_FLAGS) $(NEW_JDK_FLAGS) $(if $(APP),-cp $(APP_JAR) $(APP),-jar $(JAR)) --port $(PORT) --bind $(BIND) $(if $(DB),--db '$(DB)',--data $(DATA)) $(if $(APP),,$(FRONTEND_ARGS)) $(ARGS)

# A consistent, compacted copy of $(DATA) in $(TO)/data.mdb, safe while a server serves $(DATA) (README,
# "Backup and restore"). Any front end's jar can do it; the heap is small, the copy is not on the heap.
backup: check-server $(JAR)
	@if [ -z "$(TO)" ]; then echo "make backup: give TO=DIR, a new or empty directory (e.g. make backup TO=backups/$$(date +%F))" >&2; exit 2; fi
	$(SERVER_JAVA) -Xmx64m $(LMDB_FLAGS) -jar $(JAR) --data $(DATA) --backup $(TO)

# Beyond one box, on one machine (docs/scaling.md): PostgreSQL primary + hot standby, two SERVER servers
# over it, nginx in front on PORT; the data stays in CLUSTER_DIR between runs. JAR=... on the command line
# runs an app's own jar as it is (not rebuilt here).
CLUSTER_DIR ?= cluster
cluster: check-server $(if $(filter command line,$(origin JAR)),,$(JAR))
	@if [ ! -f "$(JAR)" ]; then echo "make cluster: no jar at $(JAR)" >&2; exit 2; fi
	JAR=$(JAR) JAVA="$(SERVER_JAVA)" JAVA_FLAGS="$(JAVA_FLAGS) $(NEW_JDK_FLAGS)" PORT=$(PORT) scripts/cluster.sh start $(CLUSTER_DIR)

cluster-stop:
	scripts/cluster.sh stop $(CLUSTER_DIR)

# Maven prints each module's surefire summary; the sweep's pytest suite (sweep/tests) its own closing line.
# install, not verify: conformance's StarterTest builds a new app against the installed artifacts.
test:
	mvn -B --no-transfer-progress install
	$(MAKE) docs
	cd powercut/fs && python3 -m unittest test_powercutfs
	./ab-sweep.sh --setup
	cd sweep && .venv/bin/python -m pytest

# Power cuts under load through the FUSE layer powercut/fs/powercutfs.py (docs/durability.md); the last
# line is the summary, "cuts: N, acknowledged writes lost: 0, ...". NOSYNC=1 opens LMDB with MDB_NOSYNC:
# the same checks must then find lost writes. Needs /dev/fuse, root, apt-get install fuse3 python3-pyfuse3.
CUTS ?= 20
NOSYNC ?=
powercut:
	$(MVN) -DskipTests -pl powercut -am package
	$(JAVA) -Xmx256m $(LMDB_FLAGS) -cp "powercut/target/classes:$$(cat powercut/target/classpath.txt)" \
	  kiln.powercut.PowerCut --cuts $(CUTS) $(if $(NOSYNC),--no-sync) $(if $(SEED),--seed $(SEED))

# Point reads (JMH) and durable writes/s with and without group commit; ~2 minutes. The data dir
# is under bench/target on the real disk: write figures are fsync figures (tmpfs would lie).
# BASELINE=REV (a commit, tag or branch) runs the same benchmarks against that revision's kiln-db too,
# side by side in one run (ROUNDS rounds, the order alternating): before/after figures of a change.
BASELINE ?=
ROUNDS ?= 5
bench-db:
	$(MVN) -DskipTests -pl bench -am package
ifeq ($(BASELINE),)
	$(JAVA) -Xms256m -Xmx256m $(LMDB_FLAGS) -Dkiln.bench.dir=bench/target/bench-data \
	  -cp "bench/target/classes:$$(cat bench/target/classpath.txt)" kiln.bench.BenchDb $(if $(filter model,$(ONLY)),--model)
else
	rm -rf bench/target/baseline-src && git worktree add --detach bench/target/baseline-src $(BASELINE)
	cd bench/target/baseline-src && $(MVN) -DskipTests -pl $$(test -d db-lmdb && echo db,db-lmdb || echo db) -am package
	rm -rf bench/target/baseline-jars && mkdir -p bench/target/baseline-jars
	cp $$(ls bench/target/baseline-src/db*/target/kiln-db*.jar | grep -v -e '-sources.jar' -e '-javadoc.jar' -e '-tests.jar') bench/target/baseline-jars/
	git worktree remove --force bench/target/baseline-src
	$(JAVA) -Xms256m -Xmx256m $(LMDB_FLAGS) -Dkiln.bench.dir=bench/target/bench-data \
	  -cp "bench/target/classes:$$(cat bench/target/classpath.txt)" kiln.bench.CompareDb \
	  "$(BASELINE)" $$(ls bench/target/baseline-jars/*.jar | paste -sd:) \
	  $$(ls db/target/kiln-db-*.jar db-lmdb/target/kiln-db-lmdb-*.jar | grep -v -e '-sources.jar' -e '-javadoc.jar' -e '-tests.jar' | paste -sd:) $(ROUNDS)
endif

# CPU per commit to one room while 0..10,000 subscribers follow other rooms: prefix feeds against
# the table's feed filtered; and what the subscribers cost the writer thread, its CPU and a write's
# latency, with the delivery latency beside (docs/benchmarks/); 2-3 minutes.
bench-feeds:
	$(MVN) -DskipTests -pl bench -am package
	$(JAVA) -Xms256m -Xmx256m $(LMDB_FLAGS) -Dkiln.bench.dir=bench/target/bench-data \
	  -cp "bench/target/classes:$$(cat bench/target/classpath.txt)" kiln.bench.FeedBench

# A request trickled one byte per read through kiln's own parser (http); about 20 s.
bench-parser:
	$(MVN) -DskipTests -pl http -am package
	$(JAVA) -cp http/target/classes:http/target/test-classes kiln.http.spi.TrickleBench

# Bytes per idle keep-alive connection (heap from jcmd's class histogram, RSS), every front end of
# frontends.conf beside the dummy, nginx and netty anchors: ./ab-sweep.sh --memory (README, "Benchmark sweep").
# About a minute per server; 19500 connections fit an open-files limit of 20000.
CONNECTIONS ?= 19500
bench-memory:
	./ab-sweep.sh --memory --concurrency $(CONNECTIONS) $(if $(HEAP),--heap $(HEAP)) all

# Issue 36's attacks at full size (5,000 partial bodies, then 20,000 heads only) against SERVER started with
# make demo's flags and defaults, a /plaintext probe watching; about a minute (scripts/hostile-bench.sh).
bench-hostile: check-server $(JAR)
	$(MVN) -DskipTests -pl conformance -am test-compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=test
	JAR=$(JAR) JAVA="$(SERVER_JAVA)" JAVA_FLAGS="$(NEW_JDK_FLAGS)" FRONTEND_ARGS="$(FRONTEND_ARGS)" \
	  CP="conformance/target/test-classes:$$(cat conformance/target/classpath.txt)" scripts/hostile-bench.sh

# Other connections' round trips (p50/p99/max) while a handler blocks its carrier (Thread.sleep, a blocking
# HttpClient.send to the same server) or spins on it, one carrier, with and without the hand-off; about 80 s.
bench-traps:
	$(MVN) -DskipTests -pl http-kilim -am package dependency:build-classpath -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=test
	$(JAVA) -Xms256m -Xmx256m $(LMDB_FLAGS) -cp "http-kilim/target/test-classes:http-kilim/target/classes:$$(cat http-kilim/target/classpath.txt)" kiln.kilim.TrapBench

clean:
	$(MVN) clean
