# Board support and the runtime for a Cortex-M firmware project (configured with
# toolchain-arm-none-eabi.cmake): include() it, then qlstm_firmware(NAME SOURCES...).
if(NOT QLSTM_BOARD_LD)
  message(FATAL_ERROR "configure with -DCMAKE_TOOLCHAIN_FILE=${CMAKE_CURRENT_LIST_DIR}/toolchain-arm-none-eabi.cmake")
endif()
set(QLSTM_CORTEX_M_DIR ${CMAKE_CURRENT_LIST_DIR})
add_subdirectory(${QLSTM_CORTEX_M_DIR}/../../runtime ${CMAKE_BINARY_DIR}/runtime)

# Startup, vector table, fault handler; the linker script picks the board's memory map.
add_library(qlstm_board STATIC ${QLSTM_CORTEX_M_DIR}/boards/startup.c)
target_compile_options(qlstm_board PRIVATE -Wall -Wextra -Werror)
target_link_options(qlstm_board INTERFACE -T${QLSTM_BOARD_LD} -L${QLSTM_CORTEX_M_DIR}/boards
                    -Wl,-Map=$<TARGET_PROPERTY:NAME>.map)

# An executable for the board. C++ without exceptions or RTTI, linked by the C driver: nothing
# from libstdc++ is needed.
function(qlstm_firmware name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE qlstm::runtime -Wl,--whole-archive qlstm_board -Wl,--no-whole-archive)
  target_compile_options(${name} PRIVATE -Wall -Wextra -Werror
    $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions -fno-rtti -fno-threadsafe-statics>)
  set_target_properties(${name} PROPERTIES SUFFIX ".elf" LINKER_LANGUAGE C
    LINK_DEPENDS "${QLSTM_BOARD_LD};${QLSTM_CORTEX_M_DIR}/boards/sections.ld")
endfunction()
