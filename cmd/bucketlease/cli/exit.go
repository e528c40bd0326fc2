package cli

// exitCodesHelp documents the exit codes of package exitcode; docs/cli.md
// lists them too: keep the three in step.
const exitCodesHelp = `Exit codes:
  (demo, show, prune and version exit 0, 1 or 2 only; list also 10)
  0    success (hold: the lease was released after an interrupt or after its command succeeded; put: stored, its version printed;
       get: written in full; verify: the object matches)
  1    an error: the URL, the credentials, the service or the network (put: also reading FILE, or no hold answering;
       get, verify: also no such key)
  2    a usage error: unknown command or flag, missing argument (put: also the key LEASE, a scratch key, sub/LEASE
       without --overwrite-lease-object, --concurrency 0)
  3    hold, put URL: another instance holds the lease (without --wait); -E N makes it N (hold)
  4    break: refused, because the lease changed since you looked at it, or it is fresh (see --force), or on a terminal the answer was not yes;
       put: refused, the key exists (--if-absent) or has another version than --if-match names; nothing was written;
       get, verify: the object's version is not --version's; nothing was written
  5    probe: the service does not give the exclusion its driver declares;
       hold, put URL: the service ignores write preconditions, so the lease refuses to run on it
  6    hold, put URL: a fresh lease names this --instance-id but this process did not write it: another live process
       holds it under the same id, or (without --wait) this instance's previous process died and left it; with
       --wait, the record was seen renewed: another live process holds it, waiting would not help
  7    put -- COMMAND: the producer exited non-zero or was killed by a signal; the upload was aborted, nothing was written
  8    put: the input did not match --size or --sha256; the upload was aborted, nothing was written;
       verify: the object does not match --size or --sha256
  9    put: stored, but its version could not be written to stdout (a closed pipe, a full disk); the object exists
  10   list --late: it found late writes, objects stored after their writer's lease had passed on
  11   put: stored (its version printed), but the service answered only after the lease was fenced (put was paused, or its
       request held up): it may have landed after another holder took over, a late write; list --late tells
  124  hold: the lease was lost, fenced, broken or deleted while held; the command, if any, was stopped; --lost-exit N makes it N;
       put: the lease ended before the commit; the upload was aborted, nothing was written
  125  hold: the lease could not be released (it stays until its TTL runs out); put URL: stored, but the lease could not be released
  126  hold: the command could not be started (not executable); put -- COMMAND: the producer cannot be run, nothing was written
  127  hold: the command was not found; put -- COMMAND: the producer was not found, nothing was written
  128+N  hold, put, get, verify: stopped by signal N (130 SIGINT, 143 SIGTERM); an acquire it stopped released what it wrote; put: the upload was aborted, nothing was written
  other  hold -- COMMAND: the command's own exit status (128+N if it was killed by signal N)
`
