# Included by the host build: the firmware for every CPU, built with the cross toolchain into
# ${CMAKE_BINARY_DIR}/targets/<cpu>, where `qlstm ... --target CPU` finds it. Sets
# QLSTM_TARGET_CPUS (empty without gcc-arm-none-eabi and qemu-system-arm).
set(QLSTM_ALL_TARGET_CPUS cortex-m55 cortex-m55-nomve cortex-m33 cortex-m4 cortex-m3)
set(QLSTM_TARGET_CPUS "")
find_program(QLSTM_ARM_GCC arm-none-eabi-gcc)
find_program(QLSTM_QEMU_ARM qemu-system-arm)
if(QLSTM_ARM_GCC AND QLSTM_QEMU_ARM AND NOT QLSTM_SANITIZE AND NOT QLSTM_FUZZ)
  include(ExternalProject)
  set(QLSTM_TARGET_CPUS ${QLSTM_ALL_TARGET_CPUS})
  # The CMSIS-NN backend on the devices (docs/targets.md): one prebuilt library per CPU, named by a
  # pattern in which @CPU@ stands for the CPU, e.g. /opt/cmsis-nn/build/@CPU@/libcmsis-nn.a.
  set(QLSTM_CMSIS_NN_TARGET_LIBRARY "" CACHE STRING "CMSIS-NN library per target CPU (@CPU@ = the CPU name)")
  foreach(cpu IN LISTS QLSTM_TARGET_CPUS)
    set(_backend "")
    if(QLSTM_CMSIS_NN_TARGET_LIBRARY)
      string(REPLACE "@CPU@" "${cpu}" _lib "${QLSTM_CMSIS_NN_TARGET_LIBRARY}")
      set(_backend -DQLSTM_CMSIS_NN_INCLUDE_DIR=${QLSTM_CMSIS_NN_INCLUDE_DIR} -DQLSTM_CMSIS_NN_LIBRARY=${_lib})
    endif()
    ExternalProject_Add(firmware_${cpu}
      SOURCE_DIR ${PROJECT_SOURCE_DIR}/targets/cortex-m
      BINARY_DIR ${CMAKE_BINARY_DIR}/targets/${cpu}
      CMAKE_ARGS -DCMAKE_TOOLCHAIN_FILE=${PROJECT_SOURCE_DIR}/targets/cortex-m/toolchain-arm-none-eabi.cmake
                 -DQLSTM_CPU=${cpu} -DCMAKE_BUILD_TYPE=Release ${_backend}
      BUILD_ALWAYS ON INSTALL_COMMAND ""
      BUILD_BYPRODUCTS ${CMAKE_BINARY_DIR}/targets/${cpu}/qlstm_device.elf)
    list(APPEND _firmware firmware_${cpu})
  endforeach()
  add_custom_target(firmware ALL DEPENDS ${_firmware})
else()
  message(STATUS "qlstm: no Cortex-M firmware (needs gcc-arm-none-eabi and qemu-system-arm; not in sanitizer or fuzz builds)")
endif()
