package redisstore_test

import (
	"testing"

	"orders/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }
