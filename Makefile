# kiln — `make demo` starts a front end over a populated LMDB database; `make test` runs every test.
# Prerequisites (Debian/Ubuntu): sudo apt-get install -y openjdk-17-jdk-headless maven make

SHELL := /bin/bash
.DEFAULT_GOAL := help

SERVER ?= kilim
PORT   ?= 8080
BIND   ?= 0.0.0.0
DATA   ?= data
# Heap for a 1 GB VPS: leaves room for LMDB's page cache, thread stacks and the OS.
HEAP   ?= 256m
MVN    ?= mvn -B -q

# lmdbjava needs these on JDK 17+ (see README, "JVM flags").
LMDB_FLAGS := --add-opens java.base/java.nio=ALL-UNNAMED --add-exports java.base/sun.nio.ch=ALL-UNNAMED
JAVA       ?= java
JAVA_FLAGS := -Xms$(HEAP) -Xmx$(HEAP) $(LMDB_FLAGS)

# SERVER name -> runnable jar and its extra arguments
JAR_kilim := http-kilim/target/kiln-kilim.jar
ARGS_kilim :=
JAR_jetty-async := http-jetty-async/target/kiln-jetty.jar
ARGS_jetty-async := --mode async
JAR_jetty-blocking := $(JAR_jetty-async)
ARGS_jetty-blocking := --mode blocking
JAR_undertow-async := http-undertow-async/target/kiln-undertow.jar
ARGS_undertow-async := --mode async
JAR_undertow-blocking := $(JAR_undertow-async)
ARGS_undertow-blocking := --mode blocking
JAR_comsat := http-comsat/target/kiln-comsat.jar
ARGS_comsat :=
# Quasar (comsat) runs only on JDK 17: the first JDK 17 in Debian's JVM directory, else $(JAVA)
# (the server then names a JDK 17 if $(JAVA) is another version). Override with JAVA_comsat=...
JAVA_comsat ?= $(or $(firstword $(wildcard /usr/lib/jvm/*-17-*/bin/java /usr/lib/jvm/*17*/bin/java)),$(JAVA))

JAR  = $(JAR_$(SERVER))
ARGS = $(ARGS_$(SERVER))
# The java that runs SERVER: JAVA_<server> when a front end needs a particular JDK, else $(JAVA).
SERVER_JAVA = $(or $(JAVA_$(SERVER)),$(JAVA))
SERVERS := kilim jetty-async jetty-blocking undertow-async undertow-blocking comsat

.PHONY: help build demo test bench-db bench-parser clean check-server

help:
	@echo "make demo [SERVER=$(SERVERS)] [PORT=8080] [DATA=data] [HEAP=256m]   build if needed and start a server"
	@echo "make test                                  run every test (unit, database, HTTP conformance, sweep)"
	@echo "make build                                 build every runnable jar (skips tests)"
	@echo "make bench-db                              database micro-benchmarks (prints a table)"
	@echo "make bench-parser                          Kilim parser: a request trickled one byte per read, resumed vs re-parsed"
	@echo "make clean                                 remove build output (keeps ./$(DATA))"

check-server:
	@if [ -z "$(JAR)" ]; then echo "make: unknown SERVER '$(SERVER)'; choose one of: $(SERVERS)" >&2; exit 2; fi

build:
	$(MVN) -DskipTests package

# Rebuild when any source or pom changed since the jar was made.
$(JAR_kilim): $(shell find db app http-kilim -name '*.java' -o -name pom.xml 2>/dev/null) pom.xml
	$(MVN) -DskipTests -pl http-kilim -am package

$(JAR_jetty-async): $(shell find db app http-jetty-async -name '*.java' -o -name pom.xml 2>/dev/null) pom.xml
	$(MVN) -DskipTests -pl http-jetty-async -am package

$(JAR_undertow-async): $(shell find db app http-undertow-async -name '*.java' -o -name pom.xml 2>/dev/null) pom.xml
	$(MVN) -DskipTests -pl http-undertow-async -am package

$(JAR_comsat): $(shell find db app quasar-agent http-comsat -name '*.java' -o -name pom.xml -o -name suspendables 2>/dev/null) pom.xml
	$(MVN) -DskipTests -pl http-comsat -am package

demo: check-server $(JAR)
	@echo "Starting kiln ($(SERVER)) on http://$(BIND):$(PORT)/ with data in ./$(DATA), heap $(HEAP). Ctrl-C stops it cleanly."
	@echo "  try: curl http://127.0.0.1:$(PORT)/db    curl 'http://127.0.0.1:$(PORT)/updates?queries=5'"
	exec $(SERVER_JAVA) $(JAVA_FLAGS) -jar $(JAR) --port $(PORT) --bind $(BIND) --data $(DATA) $(ARGS)

# Maven prints each module's surefire summary; the sweep's own tests end with "N passed, N failed".
test:
	mvn -B --no-transfer-progress verify
	./ab-sweep.sh --setup
	sweep/test.sh

# Point reads (JMH) and durable writes/s with and without group commit; ~2 minutes. The data dir
# is under bench/target on the real disk: write figures are fsync figures (tmpfs would lie).
bench-db:
	$(MVN) -DskipTests -pl bench -am package
	$(JAVA) -Xms256m -Xmx256m $(LMDB_FLAGS) -Dkiln.bench.dir=bench/target/bench-data \
	  -cp "bench/target/classes:$$(cat bench/target/classpath.txt)" kiln.bench.BenchDb

# A request trickled one byte per read through the Kilim front end's parser; about 20 s.
bench-parser:
	$(MVN) -DskipTests -pl http-kilim -am package
	$(JAVA) -cp http-kilim/target/classes:http-kilim/target/test-classes:app/target/classes kiln.kilim.TrickleBench

clean:
	$(MVN) clean
