#include "server/store_pool.h"

#include "gtest/gtest.h"
#include "store/testing.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

TEST(StorePoolTest, LendsOneConnectionPerBorrowerAndReusesReturnedOnes) {
  test::ScopedTempDir temp;
  const fs::path db = temp.path() / "compatlab.db";
  ASSERT_TRUE(Store::Open(db, OpenMode::kReadWriteCreate).ok());
  StorePool pool(db);
  Store* first = nullptr;
  {
    absl::StatusOr<StorePool::Lease> a = pool.Borrow();
    ASSERT_TRUE(a.ok()) << a.status();
    absl::StatusOr<StorePool::Lease> b = pool.Borrow();
    ASSERT_TRUE(b.ok()) << b.status();
    first = &**a;
    EXPECT_NE(first, &**b);  // two requests at once: two connections
    EXPECT_EQ(pool.idle(), 0u);
  }
  EXPECT_EQ(pool.idle(), 2u);
  absl::StatusOr<StorePool::Lease> again = pool.Borrow();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(pool.idle(), 1u);
  EXPECT_TRUE((*again)->QueryRuns({}).ok());  // a working connection
}

TEST(StorePoolTest, MissingStoreIsNotFoundAndNotCreated) {
  test::ScopedTempDir temp;
  StorePool pool(temp.path() / "missing.db");
  EXPECT_EQ(pool.Borrow().status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(temp.path() / "missing.db"));
  EXPECT_EQ(pool.idle(), 0u);
}

}  // namespace
}  // namespace compatlab
