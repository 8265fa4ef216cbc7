-- Capture with up to three tries: a failed pipeline run is retried after
-- a pause, and every failure is reported.

function retry_capture()
  wake()
  for try = 1, 3 do
    if start_pipeline(2) then
      wait_until(function() return pipeline_status(2) ~= "running" end, 120)
      if pipeline_status(2) == "ok" then
        suspend()
        return try
      end
    end
    tm(20, try)
    sleep(30)
  end
  suspend()
  return 0
end
