# gzip_pages.cmake -- cmake -DIN=DIR -DOUT=DIR -P gzip_pages.cmake: writes
# each manual page of IN (NAME.1, .5, .8) to OUT/NAME.N.gz, as Debian
# installs them: gzip -9 without a name or time inside (-n), so the same
# page gives the same bytes in every build.
file(GLOB pages ${IN}/*.1 ${IN}/*.5 ${IN}/*.8)
file(MAKE_DIRECTORY ${OUT})
foreach(page ${pages})
  get_filename_component(name ${page} NAME)
  execute_process(COMMAND gzip -9 -n -c ${page} OUTPUT_FILE ${OUT}/${name}.gz
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip ${page}: ${rc}")
  endif()
endforeach()
