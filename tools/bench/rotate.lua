-- rotate.lua: the wrk script of `make bench`. Every request carries the next
-- user token of the tokens file written by `seckill tokens` (userId,token
-- lines), so that each request is a different user. A line with a third
-- field (userId,token,admission) sends it as the header Admission-Token
-- (the waiting room's admitted purchase); a fourth field
-- (userId,token,,ticket) sends it as the header Queue-Ticket (the waiting
-- room's poll with its place ticket).
--
-- Environment (read in every wrk thread):
--   BENCH_TOKENS  the tokens file (required)
--   BENCH_METHOD  GET or POST (default GET)
--   BENCH_ONCE    1: each token is used once; a thread whose share of the
--                 tokens is spent wraps around and counts the reuse as
--                 "wrapped" (the run then had too few tokens). 0: cycle freely.
--   BENCH_ADDRS   host:port,host:port,...: thread i connects to address
--                 i mod n instead of the URL's (the URL's path and Host
--                 header stay): several instances under one wrk run. Empty:
--                 every thread the URL's.
--   BENCH_TOKEN_PREFIX  put before each token in the header (e.g. "Bearer ";
--                 default none)
--   BENCH_ENVELOPE  "success": the answers carry {"success":true|false,
--                 "errorMsg":...} (another service's envelope, peer.sh);
--                 every answer's success is tallied (success_true,
--                 success_false) and each errorMsg (errmsg_<text>, spaces
--                 as _). Default: only the "code" of non-2xx answers.
--
-- Threads take disjoint shares of the file in blocks of lines: line i goes
-- to thread floor(i / block) mod n. A block is 5040 lines (fewer when the
-- file is short), a multiple of every bucket count up to 16 but 11 and 13:
-- each thread's users cover every home bucket (userId mod N) alike, however
-- fast the threads run.
-- response() tallies status codes and the envelope's "code"; done() prints
-- one line per figure, "BENCH <name> <value>", that the bench reads:
-- requests sent, responses received, 2xx, per-status and per-code counts,
-- wrk's own error counters and latency percentiles in microseconds.

local threads = {}
local counter = 0
local addrs = nil

function setup(thread)
   local list = os.getenv("BENCH_ADDRS") or ""
   if addrs == nil and list ~= "" then
      addrs = {}
      for hp in list:gmatch("[^,]+") do
         local h, p = hp:match("^(.+):(%d+)$")
         if h == nil then
            error("rotate.lua: BENCH_ADDRS: " .. hp .. " is not host:port")
         end
         table.insert(addrs, wrk.lookup(h, p)[1])
      end
   end
   if addrs ~= nil then
      thread.addr = addrs[(counter % #addrs) + 1]
   end
   thread:set("id", counter)
   table.insert(threads, thread)
   counter = counter + 1
end

function init(args)
   local path = os.getenv("BENCH_TOKENS")
   if path == nil or path == "" then
      error("rotate.lua: BENCH_TOKENS is not set")
   end
   local nthreads = tonumber(os.getenv("BENCH_THREADS") or "1")
   local method = os.getenv("BENCH_METHOD") or "GET"
   once = os.getenv("BENCH_ONCE") == "1"
   prefix = os.getenv("BENCH_TOKEN_PREFIX") or ""
   envelope = os.getenv("BENCH_ENVELOPE") == "success"
   tokens, admissions, tickets = {}, {}, {}
   local lines = {}
   local f = assert(io.open(path, "r"))
   for line in f:lines() do
      local tok, adm, tk = line:match("^%d+,([^,%s]+),?([^,%s]*),?(%S*)")
      if tok ~= nil then
         table.insert(lines, { tok, adm, tk })
      end
   end
   f:close()
   local block = math.max(1, math.min(5040, math.floor(#lines / nthreads)))
   for i, l in ipairs(lines) do
      if math.floor((i - 1) / block) % nthreads == id then
         table.insert(tokens, l[1])
         table.insert(admissions, l[2])
         table.insert(tickets, l[3])
      end
   end
   if #tokens == 0 then
      error("rotate.lua: no tokens for thread " .. id .. " in " .. path)
   end
   ntokens = #tokens
   wrk.method = method
   wrk.headers["Content-Type"] = "application/json"
   if method == "POST" then
      wrk.body = ""
   end
   idx = 0
   sent, received, wrapped = 0, 0, 0
   statuses, codes = {}, {}
end

function request()
   idx = idx + 1
   if idx > #tokens then
      idx = 1
   end
   sent = sent + 1
   if once and sent > #tokens then
      wrapped = wrapped + 1
   end
   wrk.headers["authorization"] = prefix .. tokens[idx]
   if admissions[idx] ~= "" then
      wrk.headers["Admission-Token"] = admissions[idx]
   end
   if tickets[idx] ~= "" then
      wrk.headers["Queue-Ticket"] = tickets[idx]
   end
   return wrk.format()
end

function response(status, headers, body)
   received = received + 1
   local s = tostring(status)
   statuses[s] = (statuses[s] or 0) + 1
   if envelope then
      local ok = body:match('"success"%s*:%s*(%a+)') or "NONE"
      codes["success_" .. ok] = (codes["success_" .. ok] or 0) + 1
      local msg = body:match('"errorMsg"%s*:%s*"([^"]*)"')
      if msg ~= nil then
         msg = "errmsg_" .. msg:gsub("%s", "_")
         codes[msg] = (codes[msg] or 0) + 1
      end
   elseif status >= 300 then
      local code = body:match('"code"%s*:%s*"([%u_]+)"') or "NONE"
      codes[code] = (codes[code] or 0) + 1
   end
end

function done(summary, latency, requests)
   local total = { sent = 0, received = 0, wrapped = 0, tokens = 0 }
   local st, cd = {}, {}
   for _, t in ipairs(threads) do
      total.sent = total.sent + t:get("sent")
      total.received = total.received + t:get("received")
      total.wrapped = total.wrapped + t:get("wrapped")
      total.tokens = total.tokens + t:get("ntokens")
      for k, v in pairs(t:get("statuses")) do st[k] = (st[k] or 0) + v end
      for k, v in pairs(t:get("codes")) do cd[k] = (cd[k] or 0) + v end
   end
   local out = function(k, v) io.write(string.format("BENCH %s %s\n", k, tostring(v))) end
   out("requests", summary.requests)
   out("duration_us", summary.duration)
   out("rps", string.format("%.1f", summary.requests / (summary.duration / 1e6)))
   out("non2xx3xx", summary.errors.status)
   out("err_connect", summary.errors.connect)
   out("err_read", summary.errors.read)
   out("err_write", summary.errors.write)
   out("err_timeout", summary.errors.timeout)
   out("sent", total.sent)
   out("received", total.received)
   out("wrapped", total.wrapped)
   out("tokens", total.tokens)
   for k, v in pairs(st) do out("status_" .. k, v) end
   for k, v in pairs(cd) do
      if k:match("^success_") or k:match("^errmsg_") then out(k, v) else out("code_" .. k, v) end
   end
   for _, p in ipairs({ 50, 90, 99 }) do
      out("p" .. p .. "_us", latency:percentile(p))
   end
   out("max_us", latency.max)
end
