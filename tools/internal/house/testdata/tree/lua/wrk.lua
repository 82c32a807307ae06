-- wrk.lua: a load script, not embedded: KEYS are not its business.
return 0
