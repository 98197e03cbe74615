-- throttle-unmark.lua: run in one MULTI right after BullMQ's fetch of a throttle's job (moveToActive), on
-- the worker's connection: when no job is left waiting, takes out the base marker the fetch added.
-- KEYS[1]  wait: BullMQ's wait list of the queue
-- KEYS[2]  prioritized: BullMQ's prioritized set of the queue
-- KEYS[3]  marker: BullMQ's marker set of the queue
-- returns 1 when no job waits (the base marker, member '0', is out), else 0
-- Why: BullMQ's fetch adds its base marker for every job it hands out, so that a worker blocked on the
-- marker looks for the next one. A throttle's jobs reach the wait list one round at a time, a delivery
-- time before their starts, so after a fetch there is usually none: the marker then woke every other
-- worker process blocked on it for a fetch that found nothing (at 200/s with two processes: ~2 empty
-- fetches and ~2 blocking pops per job). Blocked clients are served after the transaction, so taken out
-- here the marker wakes nobody. A job pushed onto the wait list later comes with its own marker (the
-- dispatcher's round, lua/throttle-dispatch.lua; BullMQ's own scripts), so no wake is lost; a delay
-- marker is member '1' and stays.
if redis.call('LLEN', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[2]) == 0 then
  redis.call('ZREM', KEYS[3], '0')
  return 1
end
return 0
