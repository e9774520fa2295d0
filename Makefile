# rdma_exchange: PGXS build, and the two commands of the README.
#
#   make demo   installs what is missing, builds, installs, runs the demo
#   make test   installs what is missing, builds, installs, runs every test
#
# PG_CONFIG can be overridden; VPATH builds work
# (make -f /path/to/Makefile VPATH=/path/to ...).

EXTENSION = rdma_exchange
DATA = rdma_exchange--0.1.sql
MODULE_big = rdma_exchange

srcdir_rx := $(dir $(abspath $(lastword $(MAKEFILE_LIST))))
SRCS := $(sort $(patsubst $(srcdir_rx)%,%,$(wildcard $(srcdir_rx)src/*.c $(srcdir_rx)src/*/*.c)))
OBJS = $(SRCS:.c=.o)

PG_CONFIG ?= pg_config
PG_CPPFLAGS = -I$(srcdir_rx)src -I$(shell $(PG_CONFIG) --includedir)
SHLIB_LINK = -lpq -lfabric -lcrypto
PG_CFLAGS = -Wno-declaration-after-statement

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies (without --enable-depend): rebuild
# every object when any header of the project changes, so that no object
# keeps an old struct layout
$(OBJS): $(wildcard $(srcdir_rx)src/*.h $(srcdir_rx)src/*/*.h)

# object directories for VPATH builds
$(OBJS): | objdirs
.PHONY: objdirs
objdirs:
	@mkdir -p src/cluster src/planner src/exec src/transport src/bufpool

.PHONY: deps demo test
deps:
	bash $(srcdir_rx)test/install-deps.sh

demo: deps
	$(MAKE) -f $(srcdir_rx)Makefile all
	bash $(srcdir_rx)test/install-extension.sh $(srcdir_rx)
	bash $(srcdir_rx)test/demo.sh

test: deps
	$(MAKE) -f $(srcdir_rx)Makefile all
	bash $(srcdir_rx)test/install-extension.sh $(srcdir_rx)
	bash $(srcdir_rx)test/run-tests.sh
