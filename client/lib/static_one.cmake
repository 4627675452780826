# SPDX-License-Identifier: MIT
# cmake -DAR=ar -DLD=ld -DOBJCOPY=objcopy -DLIB=libbrooq-client.a -DNNG=libnng.a -P static_one.cmake
# Rewrites the static library LIB as one relocatable object: our objects, proto/'s and
# every member of NNG's static library linked together (`ld -r`), with every global
# symbol but the public brooq_* ones made local (`objcopy --keep-global-symbol`). A
# program that links libbrooq-client.a therefore sees only brooq_*: it may define or
# link its own nng_* (another NNG) or brq_* without a clash, and calls inside the
# library stay bound to the library's own copies.
foreach(v AR LD OBJCOPY LIB NNG)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "static_one.cmake: -D${v}= is required")
  endif()
endforeach()
get_filename_component(dir "${LIB}" DIRECTORY)
set(obj "${dir}/brooq-client.o")
execute_process(COMMAND "${LD}" -r -o "${obj}" --whole-archive "${LIB}" "${NNG}" --no-whole-archive
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "static_one.cmake: ${LD} -r failed (${rc}) linking ${LIB} and ${NNG}")
endif()
execute_process(COMMAND "${OBJCOPY}" --wildcard "--keep-global-symbol=brooq_*" "${obj}"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "static_one.cmake: ${OBJCOPY} failed (${rc}) localizing ${obj}")
endif()
file(REMOVE "${LIB}")
execute_process(COMMAND "${AR}" rcs "${LIB}" "${obj}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "static_one.cmake: ${AR} failed (${rc}) writing ${LIB}")
endif()
file(REMOVE "${obj}")
