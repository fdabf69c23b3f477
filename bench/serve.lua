-- wrk script of bench/serve: cycles through the request paths of the file
-- named by $PATHS (one per line), so that every request is one of many queries.
local paths = {}
for line in io.lines(os.getenv("PATHS")) do paths[#paths + 1] = line end
local i = 0
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
response = function(status, headers, body)
  if status ~= 200 then
    io.stderr:write("bench/serve: HTTP " .. status .. " " .. body .. "\n")
  end
end
