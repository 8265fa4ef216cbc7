# embed_text.cmake -- writes the text file IN as a C string constant NAME
# into the header OUT: cmake -DIN=... -DOUT=... -DNAME=... -P embed_text.cmake
# aegis-gpuburn carries its PTX kernel this way, kept as a .ptx file that
# ptxas can check (tests/gpu) and no nvcc is needed to build it.
file(READ "${IN}" text)
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "\n" "\\n\"\n    \"" text "${text}")
get_filename_component(from "${IN}" NAME)
file(WRITE "${OUT}.tmp"
  "/* Generated from ${from} by embed_text.cmake: edit that file. */\n"
  "static const char ${NAME}[] =\n    \"${text}\";\n")
# Only a changed header is rewritten, so nothing rebuilds needlessly.
configure_file("${OUT}.tmp" "${OUT}" COPYONLY)
file(REMOVE "${OUT}.tmp")
