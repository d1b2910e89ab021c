package routes

import (
	"orders/store/redisstore"
)

func init() {
	noteAdders["users"] = (*redisstore.Store).AddUserNote
}
