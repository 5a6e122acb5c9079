#!/usr/bin/env bash
# nodes.sh: a Slurm cluster of several nodes on ONE Linux host, for
# greenlight's tests (slurmtest.StartNodes runs it) and for a person who
# wants one by hand. Each node is a network namespace of its own (its own
# address on a private bridge) and a UTS namespace (its own hostname);
# the controller, which is also the "login node", sits in the bridge's
# namespace. The nodes' GPUs are fake: character devices named in
# gres.conf, 8 a node unless told.
#
#   GLN_DIR=/tmp/c GLN_NET=10.77.3 GLN_PREFIX=gl3 nodes.sh start
#   nodes.sh env                     # SLURM_CONF and PATH (the client wrappers)
#   nodes.sh node ACTION nI          # link-down, link-up, kill-slurmd, crash, start, down
#   nodes.sh stop
#
# Network safety: the simulated network exists only inside the namespaces
# made here. Before anything starts, the host's namespace gets an
# unreachable route for the range (start refuses to go on without it), so
# a Slurm client run outside the namespaces with this SLURM_CONF fails at
# once instead of sending packets to the default gateway; every client
# command goes through the wrappers in $GLN_DIR/bin, which run it inside
# the controller's namespace. stop removes all of it.
#
# Built on the recipe in the project's shared slurm-multinode notes
# (slurm-wlm 22.05, munge 0.5): three idle nodes in 0.2-0.3 s, NODE_FAIL
# some SlurmdTimeout + a ping round after a node is cut.
set -euo pipefail
D=${GLN_DIR:?GLN_DIR is the cluster folder}
N=${GLN_NODES:-3}
GPUS=${GLN_GPUS:-8}
CPUS=${GLN_CPUS:-8}
P=${GLN_PREFIX:-gln}
NET=${GLN_NET:-10.77.0}
CLUSTER=${GLN_CLUSTER:-$P}
TIMEOUT=${GLN_SLURMD_TIMEOUT:-6}
export SLURM_CONF=$D/slurm.conf

daemon_in() { # namespace hostname command...: a daemon in its netns, UTS and mount namespaces
	local ns=$1 host=$2
	shift 2
	ip netns exec "$ns" unshare --uts --mount sh -c "mount --bind $D/hosts /etc/hosts && hostname $host && exec $*"
}

start() {
	[ "$(id -u)" = 0 ] || { echo "nodes.sh needs root" >&2; exit 1; }
	if ip netns list | grep -q "^$P-ctl\b"; then echo "$P-ctl exists: run nodes.sh stop first" >&2; exit 1; fi
	mkdir -p "$D"/{munge,state,spool,log,bin,dev}
	chmod 700 "$D/munge"
	# The guard first: nothing of the cluster exists until the host's
	# namespace refuses the range. A route already there is another
	# cluster's: refuse rather than share it.
	if ! ip route add unreachable "$NET.0/24" 2>"$D/guard.err"; then
		echo "cannot add the guard route (unreachable $NET.0/24) in the host's namespace: $(cat "$D/guard.err"); refusing to start, as packets to the simulated nodes could leave the host" >&2
		exit 3
	fi
	echo "$NET.0/24" >"$D/guard-route"

	head -c 1024 /dev/urandom >"$D/munge/key"
	chmod 400 "$D/munge/key"
	munged -S "$D/munge/sock" --key-file="$D/munge/key" --log-file="$D/munge/log" \
		--pid-file="$D/munge/pid" --seed-file="$D/munge/seed" -f

	ip netns add "$P-ctl"
	ip -n "$P-ctl" link set lo up
	ip -n "$P-ctl" link add br0 type bridge
	ip -n "$P-ctl" addr add "$NET.1/24" dev br0
	ip -n "$P-ctl" link set br0 up
	for i in $(seq 1 "$N"); do
		ip netns add "$P-n$i"
		ip -n "$P-n$i" link set lo up
		# both ends made in their namespaces: no interface in the host's
		ip link add "v-n$i" netns "$P-ctl" type veth peer name eth0 netns "$P-n$i"
		ip -n "$P-ctl" link set "v-n$i" master br0 up
		ip -n "$P-n$i" addr add "$NET.$((10 + i))/24" dev eth0
		ip -n "$P-n$i" link set eth0 up
	done

	gres=""
	: >"$D/gres.conf"
	if [ "$GPUS" -gt 0 ]; then
		for g in $(seq 0 $((GPUS - 1))); do mknod -m 666 "$D/dev/nvidia$g" c 1 3; done
		gres="Gres=gpu:$GPUS"
		echo "NodeName=n[1-$N] Name=gpu File=$D/dev/nvidia[0-$((GPUS - 1))]" >"$D/gres.conf"
	fi
	echo "CgroupPlugin=cgroup/v1" >"$D/cgroup.conf"
	{
		cat <<EOF
ClusterName=$CLUSTER
SlurmctldHost=ctl($NET.1)
SlurmctldPort=7917
SlurmdPort=7918
AuthType=auth/munge
AuthInfo=socket=$D/munge/sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.%n.log
SlurmUser=root
SlurmdUser=root
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
GresTypes=gpu
MinJobAge=600
KillWait=3
SlurmdParameters=config_overrides
OverTimeLimit=0
SlurmdTimeout=$TIMEOUT
MessageTimeout=3
EOF
		for i in $(seq 1 "$N"); do
			echo "NodeName=n$i NodeHostname=n$i NodeAddr=$NET.$((10 + i)) CPUs=$CPUS RealMemory=1000 $gres State=UNKNOWN"
		done
		# GLN_PARTITIONS="a=n[1-2] b=n[3-5]": partitions of their own nodes
		# (tests that fail a node keep to theirs); one of all by default.
		if [ -z "${GLN_PARTITIONS:-}" ]; then
			echo "PartitionName=nodes Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
		fi
		for pn in ${GLN_PARTITIONS:-}; do
			echo "PartitionName=${pn%%=*} Nodes=${pn#*=} MaxTime=INFINITE State=UP"
		done
	} >"$D/slurm.conf"

	# The client wrappers: run inside the controller's namespace, unless
	# already inside one of ours (a job's batch script on a node).
	for c in sbatch srun salloc squeue scontrol scancel sinfo sacct sstat sattach sbcast; do
		cat >"$D/bin/$c" <<EOW
#!/bin/sh
case "\$(ip netns identify 2>/dev/null)" in $P-*) exec /usr/bin/$c "\$@" ;; esac
exec ip netns exec $P-ctl /usr/bin/$c "\$@"
EOW
		chmod +x "$D/bin/$c"
	done
	{
		echo "127.0.0.1 localhost"
		echo "$NET.1 ctl"
		for i in $(seq 1 "$N"); do echo "$NET.$((10 + i)) n$i"; done
	} >"$D/hosts"

	daemon_in "$P-ctl" ctl slurmctld -i
	for i in $(seq 1 "$N"); do
		mkdir -p "$D/spool/n$i"
		daemon_in "$P-n$i" "n$i" slurmd -N "n$i"
	done
	st=""
	for _ in $(seq 1 150); do
		st=$("$D/bin/sinfo" -h -o %t 2>/dev/null | sort -u | tr '\n' ' ')
		[ "$st" = "idle " ] && return 0
		sleep 0.2
	done
	echo "the nodes are not idle after 30 s: $st (logs in $D/log)" >&2
	exit 1
}

stop() {
	[ -x "$D/bin/scancel" ] && timeout 10 "$D/bin/scancel" --user=root 2>/dev/null || true
	# Only pids proven ours: those in our pid files that live in one of
	# our namespaces, then whatever else lives in them.
	pids=""
	for p in $(cat "$D"/slurmd.*.pid "$D/slurmctld.pid" 2>/dev/null); do
		case "$(ip netns identify "$p" 2>/dev/null)" in "$P"-*) pids+=" $p" ;; esac
	done
	for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
	alive=""
	for _ in $(seq 1 20); do
		alive=""
		for p in $pids; do kill -0 "$p" 2>/dev/null && alive+=" $p"; done
		[ -z "$alive" ] && break
		sleep 0.1
	done
	for p in $alive; do kill -KILL "$p" 2>/dev/null || true; done
	for ns in $(ip netns list | awk '{print $1}' | grep "^$P-" || true); do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
		ip netns del "$ns" || true
	done
	m=$(cat "$D/munge/pid" 2>/dev/null) && grep -q "$D/munge" "/proc/$m/cmdline" 2>/dev/null && kill -TERM "$m" 2>/dev/null || true
	if [ -f "$D/guard-route" ]; then ip route del unreachable "$(cat "$D/guard-route")" 2>/dev/null || true; fi
	rm -f "$D/guard-route"
}

node() { # ACTION nI
	local act=$1 n=$2
	case $act in
	kill-slurmd) kill -9 "$(cat "$D/slurmd.$n.pid")" ;;
	crash) for p in $(ip netns pids "$P-$n"); do kill -9 "$p" 2>/dev/null || true; done ;;
	link-down) ip -n "$P-ctl" link set "v-$n" down ;;
	link-up) ip -n "$P-ctl" link set "v-$n" up ;;
	start) daemon_in "$P-$n" "$n" slurmd -N "$n" ;;
	down) "$D/bin/scontrol" update nodename="$n" state=down reason=simulated ;;
	*)
		echo "unknown action $act: link-down, link-up, kill-slurmd, crash, start or down" >&2
		exit 2
		;;
	esac
}

case ${1:-} in
start) start ;;
stop) stop ;;
env) echo "export SLURM_CONF=$D/slurm.conf PATH=$D/bin:\$PATH" ;;
node) node "$2" "$3" ;;
*)
	echo "usage: nodes.sh start|stop|env|node ACTION nI" >&2
	exit 2
	;;
esac
