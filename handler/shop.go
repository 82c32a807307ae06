package handler

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/model"
)

// Shops is the shop service as the routes see it (*catalog.Shops).
type Shops interface {
	Get(ctx context.Context, id int64) (*model.Shop, error)
	Create(ctx context.Context, p model.ShopPatch) (int64, error)
	Update(ctx context.Context, id int64, p model.ShopPatch) error
}

// ShopSearch lists shops by name (catalog.ShopSearch).
type ShopSearch interface {
	List(ctx context.Context, name string) ([]model.Shop, error)
}

// shopRequest is the body of POST /shop and PUT /shop, in the course's field
// names. Pointers tell a missing or null field from a zero one. Fields the
// server owns, such as createTime, are ignored like any unknown field.
type shopRequest struct {
	ID        *int64   `json:"id"`
	Name      *string  `json:"name"`
	TypeID    *int64   `json:"typeId"`
	Images    *string  `json:"images"`
	Area      *string  `json:"area"`
	Address   *string  `json:"address"`
	X         *float64 `json:"x"`
	Y         *float64 `json:"y"`
	AvgPrice  *int64   `json:"avgPrice"`
	Sold      *int     `json:"sold"`
	Comments  *int     `json:"comments"`
	Score     *int     `json:"score"`
	OpenHours *string  `json:"openHours"`
}

func (r *shopRequest) patch() model.ShopPatch {
	return model.ShopPatch{
		Name: r.Name, TypeID: r.TypeID, Images: r.Images, Area: r.Area, Address: r.Address,
		X: r.X, Y: r.Y, AvgPrice: r.AvgPrice, Sold: r.Sold, Comments: r.Comments, Score: r.Score,
		OpenHours: r.OpenHours,
	}
}

// shopResponse is a shop in the course's JSON field names; images is the
// comma-separated string as stored.
type shopResponse struct {
	ID         int64     `json:"id"`
	Name       string    `json:"name"`
	TypeID     int64     `json:"typeId"`
	Images     string    `json:"images"`
	Area       string    `json:"area"`
	Address    string    `json:"address"`
	X          float64   `json:"x"`
	Y          float64   `json:"y"`
	AvgPrice   int64     `json:"avgPrice"`
	Sold       int       `json:"sold"`
	Comments   int       `json:"comments"`
	Score      int       `json:"score"`
	OpenHours  string    `json:"openHours"`
	CreateTime time.Time `json:"createTime"`
	UpdateTime time.Time `json:"updateTime"`
}

// shopAPI serves the shop routes.
type shopAPI struct{ *api }

// getShop is GET /shop/:id.
func (a shopAPI) getShop(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		a.fail(c, err)
		return
	}
	s, err := a.Shops.Get(c.Request.Context(), id)
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, shopResponse{
		ID: s.ID, Name: s.Name, TypeID: s.TypeID, Images: s.Images, Area: s.Area, Address: s.Address,
		X: s.X, Y: s.Y, AvgPrice: s.AvgPrice, Sold: s.Sold, Comments: s.Comments, Score: s.Score,
		OpenHours: s.OpenHours, CreateTime: s.CreateTime, UpdateTime: s.UpdateTime,
	})
}

// createShop is POST /shop (admin): data is the new shop's id.
func (a shopAPI) createShop(c *gin.Context) {
	var req shopRequest
	if err := decodeJSONLenient(c, &req); err != nil {
		a.fail(c, err)
		return
	}
	if req.ID != nil {
		a.fail(c, model.InvalidArgument("id", "must not be set: the server assigns it (PUT /shop updates a shop)"))
		return
	}
	id, err := a.Shops.Create(c.Request.Context(), req.patch())
	if err != nil {
		a.fail(c, err)
		return
	}
	ok(c, id)
}

// updateShop is PUT /shop (admin): the body's id names the shop, the other
// fields present are set, the absent ones kept.
func (a shopAPI) updateShop(c *gin.Context) {
	var req shopRequest
	if err := decodeJSONLenient(c, &req); err != nil {
		a.fail(c, err)
		return
	}
	if req.ID == nil {
		a.fail(c, model.InvalidArgument("id", "required"))
		return
	}
	if err := a.Shops.Update(c.Request.Context(), *req.ID, req.patch()); err != nil {
		a.fail(c, err)
		return
	}
	ok(c, nil)
}

// shopListItem is a shop in GET /shop/list.
type shopListItem struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Address string `json:"address"`
	Area    string `json:"area"`
}

// listShops is GET /shop/list?name=: at most 50 shops whose name contains
// name, letter case aside, in name order (every shop in id order when
// name is empty).
func (a shopAPI) listShops(c *gin.Context) {
	list, err := a.ShopSearch.List(c.Request.Context(), c.Query("name"))
	if err != nil {
		a.fail(c, err)
		return
	}
	out := make([]shopListItem, len(list))
	for i, s := range list {
		out[i] = shopListItem{ID: s.ID, Name: s.Name, Address: s.Address, Area: s.Area}
	}
	okList(c, out, int64(len(out)))
}
