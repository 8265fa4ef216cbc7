-- Six frames ten minutes apart, waking the main processor only for each.

function periodic_survey()
  local done = 0
  for i = 1, 6 do
    wake()
    if start_pipeline(1) then
      wait_until(function() return pipeline_status(1) ~= "running" end, 120)
      if pipeline_status(1) == "ok" then
        done = done + 1
      end
    end
    suspend()
    tm(10, i)
    sleep(600)
  end
  return done
end
