# shellcheck shell=bash disable=SC2034  # the variables are read by ab-sweep.sh, which sources this file
# The servers ab-sweep.sh knows: one entry per front end and mode, plus the two anchors.
# To add a front end, add its name to SWEEP_FRONT_ENDS and a case to sweep_server_def.

# Front ends in the order `all` visits them (each round rotates the starting point).
SWEEP_FRONT_ENDS=(kilim jetty-async jetty-blocking undertow-async undertow-blocking comsat)
# Anchors measured in the same rounds: the floor a Java server can reach here, and nginx.
SWEEP_ANCHORS=(dummy nginx)

# sweep_server_def NAME
#   Sets, for NAME:
#     SRV_KIND    jar (a kiln front end), dummy (sweep/DummyServer.java) or nginx
#     SRV_MODULE  Maven module that builds SRV_JAR (jar kind)
#     SRV_JAR     runnable jar, relative to the repository root
#     SRV_ARGS    arguments after the contract's --port/--bind/--data (array)
#     SRV_JVM     JVM options besides heap and the lmdbjava flags (array)
#     SRV_JDK     required `java` feature version, empty when any JDK 17+ works
#     SRV_SOURCES directories whose sources the jar is built from: newer sources mean a rebuild
#   Returns 1 for an unknown NAME.
sweep_server_def() {
  SRV_KIND=jar SRV_MODULE="" SRV_JAR="" SRV_JDK=""
  SRV_ARGS=() SRV_JVM=() SRV_SOURCES=()
  case $1 in
    kilim)
      SRV_MODULE=http-kilim SRV_JAR=http-kilim/target/kiln-kilim.jar ;;
    jetty-async | jetty-blocking)
      SRV_MODULE=http-jetty-async SRV_JAR=http-jetty-async/target/kiln-jetty.jar
      SRV_ARGS=(--mode "${1#jetty-}") ;;
    undertow-async | undertow-blocking)
      SRV_MODULE=http-undertow-async SRV_JAR=http-undertow-async/target/kiln-undertow.jar
      SRV_ARGS=(--mode "${1#undertow-}") ;;
    comsat)
      # Quasar cannot run on JDK 19+ (FACTS.md). The jar carries the repaired Quasar agent and
      # starts it itself (Launcher-Agent-Class) with the opens it needs: adding -javaagent here
      # would make Quasar instrument the JDK launcher and die before main.
      SRV_MODULE=http-comsat SRV_JAR=http-comsat/target/kiln-comsat.jar SRV_JDK=17
      SRV_JVM=()
      SRV_SOURCES=(quasar-agent) ;;
    dummy) SRV_KIND=dummy ;;
    nginx) SRV_KIND=nginx ;;
    *) return 1 ;;
  esac
  [[ $SRV_KIND != jar ]] || SRV_SOURCES+=(db app "$SRV_MODULE")
}

# sweep_server_present NAME
#   True when NAME can be run from this checkout: an anchor, or a front end whose module exists.
sweep_server_present() {
  sweep_server_def "$1" || return 1
  [[ $SRV_KIND != jar || -f $SRV_MODULE/pom.xml ]]
}
